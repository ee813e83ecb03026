"""Differential fuzzing of the guard: every language gives the same verdict.

Hypothesis builds command lines from the words the rules look for (and from
the characters that languages disagree about: \\v, NBSP, U+2028, non-ASCII
letters, emoji, ...), joined by blanks, quotes, separators and line breaks,
and programs for python -c, node -e, perl -e and ruby -e, also printed into
them (echo CODE | python3).
Each running extension judges a batch at once; all must refuse by the same
rule as zot/guard/guard.py's check, or allow with it.
"""

from __future__ import annotations

import itertools
import runpy

import pytest
from conftest import GUARD_ALLOWED, GUARD_CWD, GUARD_REFUSED, HYPOTHESIS_SCALE, LANGUAGES
from host import ExtensionProcess
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from robustness import refusals

WORDS_TEXT = """rm -rf -fr -r -f -R -Rf -rv -v --recursive --force --no-preserve-root / ~ . .. * /*
~/ ~/x "$HOME" $HOME/x ${HOME} $X x notes.txt node_modules ./dist build/ /tmp/x /etc /usr/lib
sudo -u root doas env X=1 nohup exec command time nice -n 10 timeout 5 xargs -0 -I{} eval sh bash
zsh -c su busybox then do done else if while until ! { } ( ) $( ` find -delete -exec -execdir {}
+ \\; -name '*.o' cd mkfs mkfs.ext4 mke2fs mkswap wipefs parted sgdisk -l -t ext4 /dev/sda
/dev/sda1 /dev/null /dev/nvme0n1 dd if=/dev/zero of=/dev/sda of=disk.img bs=4M > >> >| &> 2>
< <<EOF EOF cat tee -a shred truncate chmod chown 777 000 o+w a=rwx 755 a+rwx user:user curl wget
-fsSL -qO- -O- -d -F @~/.ssh/id_rsa ~/.ssh/id_rsa.pub ~/.bash_history https://x | |& || && ;
& source . <( :(){ :|:& };: bomb() function f f|f& echo printf grep git push --force
--force-with-lease +main origin main reset --hard checkout -- restore --staged clean -fdx -n
branch -D stash drop commit -m scp nc rsync --delete host:/x python3 perl ruby node -e -m
shutdown reboot systemctl kill -9 -1 1234 crontab iptables -F rm-rf /bin/rm \\rm "rm" 'rm'
r''m '-rf' "-r" # \\ $'x' ${x:-a} -bx -qbx -B switch --discard-changes worktree remove --help
HEAD~1 src/ a.py .env __pycache__ -type -iname -o -not , g g() f() (f) export declare -fx
--pathspec-from-file=x parallel ::: :::: :::+ {.} {/} {//} {/.} {#} {1} -j4 -q -i -J % --replace
--replace=@ -I -P -S -C - --chdir=/ --split-string=rm -u --unset=X $'\\x72\\x6d' $'\\057' $"rm"
$'\\' "$(cat <<EOF )" <<<
$(( )) ${x:- $[ "$@" $@ $1 ${1} cmd=rm c='rm -rf ~' $cmd ${c} "${c[@]}" a=( local
echo -e printf '%s\\n' terraform -destroy --destroy -chdir=/ --conflict go vet"""
WORDS = WORDS_TEXT.split()
# Characters on which regex engines disagree when a pattern is careless.
ODD = [
    "\v",
    "\f",
    "\r",
    "\x1c",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "\ufeff",
    "é",
    "ß",
    "😀",
    "İ",
    "٣",
]
JOINERS = [" ", " ", " ", "  ", "\t", "", "\n", ";", " | ", " && ", "\\\n", *ODD]

word = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS).map(lambda w: f'"{w}"'),
    st.text(alphabet=st.sampled_from([*"rf-/;|&(){}$`'\"\\ \n<>#=~*.", *ODD]), max_size=4),
)
words = st.lists(st.tuples(st.sampled_from(JOINERS), word), max_size=14).map(
    lambda parts: "".join(joiner + w for joiner, w in parts).lstrip(" ")
)


def respace(case: str, joiners: list[str], before: str, after: str) -> str:
    """A case of guard-cases.json with other blanks, and more around it."""
    parts = case.split(" ")
    return before + "".join(p + j for p, j in zip(parts, [*joiners, ""], strict=False)) + after


# Random words, and the shared table's cases changed a little.
CASES = [*GUARD_REFUSED, *GUARD_ALLOWED]
near_a_case = st.builds(
    respace,
    st.sampled_from(CASES),
    st.lists(st.sampled_from([" ", " ", " ", *JOINERS]), min_size=12, max_size=12),
    st.one_of(st.just(""), words.map(lambda w: w + "; ")),
    st.one_of(st.just(""), words.map(lambda w: " " + w)),
)
# The shapes where one command hands words or code to another: xargs,
# parallel, env's options, $'...' and $(cat <<EOF ... EOF).
PIECES = (
    "rm -rf|rm -rf /|rm -rf ~|bash -c|sh -c|echo|rm|/|~|..|build|{}|{//}|git push -f|-i|-|X=1|sudo"
)
small = st.one_of(st.sampled_from(WORDS), st.sampled_from(PIECES.split("|")))
ESCAPES = [
    *"\\\\xXuUc01234567fF9aenrtv'\"?rm-/ ",
    *[r"\x72", r"\x2f", r"\057", r"\u002F", r"\0", r"\c@", r"\\"],
]
ansi_c = st.lists(st.sampled_from(ESCAPES), max_size=8).map(
    lambda parts: "$'" + "".join(parts) + "'"
)
SHAPES = [
    "xargs {0} {1} {2}",
    "{0} | xargs -I{{}} {1} {2}",
    "xargs -i {1} '{2} {{}}'",
    "parallel {1} {0} ::: {2} {0}",
    "parallel ::: '{1} {2}' {0}",
    "{0} | parallel {1} {2}",
    "env {0} {1} {2}",
    "env -S '{1} {2}' {0}",
    "env -C {0} {1} {2}",
    "{0} {1} {2}",
    'bash -c "$(cat <<EOF\n{1} {2}\nEOF\n)" {0}',
    "echo '{1} {2}' | {0}",
    "cat <<EOF | {0}\n{1} {2}\nEOF",
    "eval \"$(cat <<'EOF'\n{1} {0} {2}\nEOF\n)\"",
]
shaped = st.builds(
    lambda shape, a, b, c: shape.format(a, b, c),
    st.sampled_from(SHAPES),
    st.one_of(small, ansi_c),
    st.one_of(small, ansi_c),
    st.one_of(small, ansi_c),
)

# Programs run by python -c, node -e, perl -e and ruby -e, or read from a
# here-document: calls that run commands or delete files, look-alikes, and
# the characters that end or escape strings, written the ways a shell takes.
PROGRAM_HEADS = [
    "python3 -c",
    "python -c",
    "python3.12 -Bc",
    "python3 -m x -c",
    "python3 -",
    "python3 x.py",
    "node -e",
    "node -p",
    "node --eval",
    "perl -e",
    "perl -le",
    "perl -MFile::Path -e",
    "perl -pie",
    "ruby -e",
    "ruby -rfileutils -e",
    "sudo python3 -c",
    "python3 -B -W ignore -c",
    "perl -w -e",
    "ruby -w -e",
    "node --trace-warnings -e",
]
PROGRAM_CALLS_TEXT = """os.system os.popen subprocess.run s.check_call check_output Popen shutil.rmtree
os.remove os.unlink print system exec unlink rmtree remove_tree File::Path::rmtree
FileUtils.rm_rf FileUtils.rm File.delete IO.popen %x qx q qq fs.rmSync fs.rm fs.unlinkSync
fs.promises.rm .execSync execSync spawnSync .rmSync require console.log puts Path
pathlib.Path .unlink"""
PROGRAM_CALLS = PROGRAM_CALLS_TEXT.split()
PROGRAM_ARGS = [
    *["/", "~", "..", ".", "/etc", "/etc/passwd", "build", "/tmp/x", "src/a.py", "$HOME"],
    *["rm -rf /", "rm -rf build", "ls", "git push -f", "git status", "rm", "-rf", "-f"],
]
PROGRAM_BITS = [*"()[]{},;'\"`\\$@#%=:+\n ", "=>", "shell=True", "{recursive: true}", "f", "r", "x"]
PROGRAM_BITS += [".unlink()", ".rmdir()"]
literal = st.builds(
    lambda quote, text: quote[0] + text + quote[1],
    st.sampled_from([("'", "'"), ('"', '"'), ("`", "`"), ('"""', '"""'), ("f'", "'"), ("(", ")")]),
    st.sampled_from(PROGRAM_ARGS),
)
call = st.builds(
    lambda name, args, close: name + "(" + ", ".join(args) + close,
    st.sampled_from(PROGRAM_CALLS),
    st.lists(
        st.one_of(literal, st.lists(literal, max_size=3).map(lambda a: "[" + ", ".join(a) + "]")),
        max_size=3,
    ),
    st.sampled_from([")", ")", ")", ""]),
)
program_text = st.lists(
    st.one_of(
        call,
        call.map(lambda c: c.replace("(", " ", 1).rstrip(")")),
        literal,
        st.sampled_from(PROGRAM_BITS),
    ),
    min_size=1,
    max_size=6,
).map(lambda parts: "; ".join(parts) if len(parts) % 2 else "".join(parts))


def program_command(head: str, text: str, form: int) -> str:
    """A program on a command line: quoted for the shell, on a here-document,
    or printed into the interpreter by echo or cat."""
    quoted = "'" + text.replace("'", "'\\''") + "'"
    bare = head.removesuffix(" -c").removesuffix(" -e")
    if form == 0:
        return f"{head} {quoted}"
    if form == 1:
        escaped = "".join("\\" + c if c in '"$`\\' else c for c in text)
        return f'{head} "{escaped}"'
    if form == 2:
        return f"{bare} <<'EOF'\n{text}\nEOF"
    if form == 3:
        return f"{head} <<< {quoted}"
    if form == 4:
        return f"echo {quoted} | {bare}"
    return f"cat <<'EOF' | {bare}\n{text}\nEOF"


programs = st.builds(
    program_command, st.sampled_from(PROGRAM_HEADS), program_text, st.integers(0, 5)
)
command = st.one_of(words, near_a_case, shaped, programs)
BATCH = 50
EXAMPLES = 80 * HYPOTHESIS_SCALE
ids = itertools.count()


@pytest.fixture(scope="module")
def guards(projects):
    """One running guard-only extension per variant, and zot/guard/guard.py's check."""
    processes = {}
    try:
        for variant in LANGUAGES:
            processes[variant] = ExtensionProcess(projects.get(variant, ["guard"]))
            processes[variant].handshake(cwd=GUARD_CWD)
        guard = runpy.run_path(
            str(projects.get("python", ["guard"]) / "zot" / "guard" / "guard.py")
        )
        yield guard["check"], processes
    finally:
        for process in processes.values():
            process.kill()


# The same examples on every run, on this machine and in CI (whose "CI"
# variable would otherwise make Hypothesis pick its own settings).
FUZZ_SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@settings(FUZZ_SETTINGS, max_examples=EXAMPLES)
@given(commands=st.lists(command, min_size=BATCH, max_size=BATCH))
def test_every_language_gives_the_same_verdict(guards, commands):
    check, processes = guards
    expected = [getattr(check(c, GUARD_CWD), "rule", None) for c in commands]
    for variant, process in processes.items():
        got = refusals(process, commands, prefix=f"f{next(ids)}-")
        wrong = [(c, g) for c, g, e in zip(commands, got, expected, strict=True) if g != e]
        assert not wrong, (variant, wrong)


def test_the_fuzzer_reaches_both_verdicts(guards):
    """Otherwise the test above would prove little: commands drawn as it draws
    them are refused and allowed alike."""
    check, _ = guards
    sample: list[str] = []

    # 600, not fewer: how many of a sample are refused depends much on the
    # seed (of 300, 5 to 63; of 600, 21 to 72 over 16 seeds)
    @settings(FUZZ_SETTINGS, max_examples=600, phases=[Phase.generate])
    @given(command)
    def draw(one: str) -> None:
        sample.append(one)

    draw()
    refused = sum(check(c, GUARD_CWD) is not None for c in sample)
    assert len(sample) == 600, len(sample)
    assert 10 <= refused <= 590, refused
