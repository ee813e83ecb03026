"""A large guard-policy.json: just under the guard's 1 MiB limit, realistic rules.

The rules are the kind a team generates from its inventory: one per
production host (ssh, scp, rsync), Kubernetes context, bucket, database,
published package and systemd unit, each with its own reason and advice, plus
lists the rules share. Every field is one guard-rules.json documents, so each
engine reads the file as it would a person's.

    python bench/policy.py FILE    write one (and print its probes)
"""

from __future__ import annotations

import itertools
import json
import sys

LIMIT = 1024 * 1024  # the guard's limit: a larger file is refused (docs/guard.md)
MARGIN = 1024  # how far under the limit the file stays
SITES = ["fra1", "ams3", "lon2", "nyc1", "sfo3", "sgp1", "syd1", "tor1"]
ROLES = ["db", "api", "web", "queue", "cache", "search", "batch", "auth"]
TEAMS = ["billing", "checkout", "identity", "ledger", "search", "catalog", "growth", "infra"]


def host_rule(n: int) -> dict:
    role, site = ROLES[n % len(ROLES)], SITES[n // len(ROLES) % len(SITES)]
    host = f"{role}-{n:05d}.{site}"
    fqdn = f"{host}.prod.example.com"
    return {
        "id": f"prod-host-{n:05d}",
        "command": ["ssh", "scp", "sftp", "rsync", "mosh"],
        "arg": [host, fqdn, f"*@{host}", f"*@{fqdn}", f"{host}:*", f"*@{fqdn}:*"],
        "reason": f"{host} is a production {role} host in {site}",
        "instead": f"work on its staging twin {role}-{n:05d}.{site}.staging.example.com, "
        "or ask the on-call engineer",
    }


def kube_rule(n: int) -> dict:
    team = TEAMS[n % len(TEAMS)]
    context = f"prod-{team}-{n:05d}"
    return {
        "id": f"kube-{context}",
        "command": ["kubectl", "helm", "kustomize"],
        "subcommand": ["delete", "drain", "cordon", "scale", "rollout", "apply", "patch"],
        "arg": [context, f"{context}-*", f"arn:aws:eks:*:cluster/{context}"],
        "reason": f"the Kubernetes context {context} is {team}'s production cluster",
        "instead": "change the manifests in git and let the deploy pipeline apply them",
    }


def bucket_rule(n: int) -> dict:
    team = TEAMS[n % len(TEAMS)]
    bucket = f"acme-{team}-prod-{n:05d}"
    return {
        "id": f"bucket-{bucket}",
        "command": ["aws", "gsutil", "s5cmd", "rclone", "mc"],
        "option": ["--recursive", "-r", "--delete", "--force", "-m"],
        "arg": [f"s3://{bucket}", f"s3://{bucket}/*", f"gs://{bucket}", f"gs://{bucket}/*"],
        "reason": f"{bucket} holds {team}'s production data",
        "instead": "copy single objects by name, or ask the data owner",
    }


def database_rule(n: int) -> dict:
    team = TEAMS[n % len(TEAMS)]
    db = f"{team}-prod-{n:05d}"
    return {
        "id": f"database-{db}",
        "command": ["psql", "mysql", "mongosh", "redis-cli", "pg_dump", "pg_restore", "dropdb"],
        "arg": [db, f"postgres://*@{db}*", f"mysql://*@{db}*", f"*{db}.db.example.com*"],
        "reason": f"{db} is a production database",
        "instead": f"use the read replica {db}-replica, or a local copy",
    }


def package_rule(n: int) -> dict:
    team = TEAMS[n % len(TEAMS)]
    package = f"@acme/{team}-lib-{n:05d}"
    return {
        "id": f"publish-{team}-lib-{n:05d}",
        "command": ["npm", "pnpm", "yarn"],
        "subcommand": ["publish", "unpublish", "deprecate", "dist-tag"],
        "arg": [package, f"{package}@*"],
        "reason": f"{package} is published by {team}'s release pipeline",
        "instead": "stop and tell the user the package is ready to publish",
    }


def unit_rule(n: int) -> dict:
    team = TEAMS[n % len(TEAMS)]
    unit = f"{team}-worker-{n:05d}"
    return {
        "id": f"unit-{unit}",
        "command": ["systemctl", "service"],
        "subcommand": ["stop", "restart", "disable", "mask", "kill"],
        "arg": [unit, f"{unit}.service", f"{unit}@*.service"],
        "reason": f"{unit} serves production traffic",
        "instead": "ask the on-call engineer to restart it",
    }


KINDS = [host_rule, kube_rule, bucket_rule, database_rule, package_rule, unit_rule]


def shared_lists() -> dict:
    """Lists the rules refer to as @name (and one that replaces the template's)."""
    jump = [f"bastion-{i:03d}.{site}.example.com" for site in SITES for i in range(40)]
    return {
        "jump hosts": jump,
        "network": [
            *["curl", "wget", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat"],
            *["telnet", "ftp", "http", "https", "xh", "ssh", "rclone", "s5cmd", "mc"],
        ],
    }


def shared_rules() -> list[dict]:
    return [
        {
            "id": "no-jump-hosts",
            "command": ["ssh", "scp", "sftp", "rsync", "mosh"],
            "arg": ["@jump hosts"],
            "reason": "the bastion hosts lead into production",
            "instead": "ask the on-call engineer",
        },
    ]


def policy(limit: int = LIMIT - MARGIN) -> tuple[dict, list[tuple[str, str | None]]]:
    """The policy, and probes: (command, the id of the rule that refuses it or None).

    Its text (see text()) is at most `limit` bytes, and within one rule of it.
    """
    data = {
        "about": "Generated from the inventory: do not edit by hand.",
        "off": ["git-stash-drop"],
        "rules": shared_rules(),
        "lists": shared_lists(),
    }
    size = len(text(data).encode())
    for n in itertools.count():
        rule = KINDS[n % len(KINDS)](n)
        size += len(line(rule).encode())
        if size > limit:
            break
        data["rules"].append(rule)
    last_host = next(r for r in reversed(data["rules"]) if r["id"].startswith("prod-host-"))
    first_kube = next(r for r in data["rules"] if r["id"].startswith("kube-"))
    probes = [
        ("ls -la", None),
        ("git status", None),
        ("rm -rf /", "delete-outside-project"),
        # commands many rules are asked about, none refusing
        ("ssh build-00017.fra1.staging.example.com uptime", None),
        (f"kubectl get pods --context {first_kube['arg'][0]}", None),
        ("psql -h localhost -c 'select 1' app_dev", None),
        # refused by one of the last rules
        (f"ssh {last_host['arg'][0]} uptime", last_host["id"]),
    ]
    return data, probes


def line(rule: dict) -> str:
    return "    " + json.dumps(rule) + ",\n"


def text(data: dict) -> str:
    """The JSON as a generator writes it: one rule a line."""
    head = {k: v for k, v in data.items() if k != "rules"}
    rules = "".join(line(rule) for rule in data["rules"]).removesuffix(",\n")
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
    parts.append('  "rules": [\n' + rules + "\n  ]")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    made, checks = policy()
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(text(made))
    print(f"{len(text(made).encode())} bytes, {len(made['rules'])} rules")
    for command, rule in checks:
        print(f"  {command!r}: {rule or 'allowed'}")
