"""The golden snapshots in examples/ are what the template renders now."""

import pytest
from golden import EXAMPLES, INDEX, SNAPSHOTS, differences, snapshot


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_the_example_is_what_the_template_renders(tmp_path, name):
    snapshot(name, tmp_path / name)
    changed = differences(EXAMPLES / name, tmp_path / name)
    assert not changed, (
        f"examples/{name} is not what the template renders now: {changed}; "
        f"run scripts/examples {name} and review the diff"
    )


def test_every_example_is_a_snapshot():
    assert sorted(p.name for p in EXAMPLES.iterdir()) == sorted(SNAPSHOTS)
    for name in SNAPSHOTS:
        assert (EXAMPLES / name / INDEX).is_file(), name
