"""The workflows and the composite action, read as YAML, keep the rules a team adopting them relies
on: no pull_request_target or workflow_run job that runs checked-out code, no write permission
where a fork's code runs, no untrusted expression spliced into a shell, every action pinned by
commit (with its version said beside it), no checkout that keeps credentials, no fork's pull
request on a self-hosted runner, board jobs queued per runner (never cancelled by another pull
request), the board matrix read from the inventory, the inventory's labels known to actionlint,
and the privileged re-recording job on boards that never run a pull request's code. Each rule is
also shown to catch a workflow that breaks it."""

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"
INVENTORY = ROOT / ".github" / "jetson-boards.yml"

#: expressions whose text a pull request's author controls (GitHub's list of untrusted inputs,
#: and the action's inputs, which a calling workflow may fill from them)
UNTRUSTED = re.compile(r"\$\{\{[^}]*\b(github\.event\.|github\.head_ref|inputs\.)[^}]*\}\}")
SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


def load(path):
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True
    if isinstance(doc, dict) and True in doc:
        doc["on"] = doc.pop(True)
    return doc


def triggers(doc):
    on = doc.get("on") or {}
    return {on} if isinstance(on, str) else set(on)


def steps(doc):
    if "runs" in doc:
        yield "action", doc["runs"].get("steps", [])
        return
    for name, job in (doc.get("jobs") or {}).items():
        yield name, job.get("steps", [])


# -- the rules -------------------------------------------------------------------------------------
def privileged_checkouts(doc):
    """Jobs of a privileged trigger (pull_request_target, workflow_run: the base repository's
    token and secrets) that check code out or run a local action."""
    if not triggers(doc) & {"pull_request_target", "workflow_run"}:
        return []
    return [f"{job}: {step.get('uses')}" for job, ss in steps(doc) for step in ss
            if str(step.get("uses", "")).startswith(("actions/checkout", "./"))]


def _writes(permissions):
    if permissions in ("write-all",):
        return ["write-all"]
    if isinstance(permissions, dict):
        return [f"{k}: {v}" for k, v in permissions.items() if v == "write"]
    return []


def fork_code_with_write(doc):
    """Jobs that run a pull request's code (pull_request) with a write permission; a job without
    its own permissions gets the workflow's (and without either, the repository's default, which
    may be write)."""
    if "pull_request" not in triggers(doc):
        return []
    problems = []
    for name, job in (doc.get("jobs") or {}).items():
        if "if" in job and "pull_request" not in str(job["if"]) and "workflow_dispatch" in str(job["if"]):
            continue  # a job that never runs on a pull request
        permissions = job.get("permissions", doc.get("permissions"))
        if permissions is None:
            problems.append(f"{name}: no permissions (the repository default applies)")
        problems += [f"{name}: {w}" for w in _writes(permissions)]
    return problems


def untrusted_in_shell(doc):
    """`run:` scripts with an expression a pull request's author controls spliced in."""
    return [f"{job}: {m.group(0)}" for job, ss in steps(doc) for step in ss
            for m in UNTRUSTED.finditer(str(step.get("run", "")))]


def unpinned(doc):
    """Actions referenced by tag or branch (a moved tag runs other code)."""
    return [f"{job}: {step['uses']}" for job, ss in steps(doc) for step in ss
            if "uses" in step and not str(step["uses"]).startswith("./") and not SHA.match(str(step["uses"]))]


def checkouts_keeping_credentials(doc):
    """Checkouts that leave the token in .git/config, where every later step (and, on a
    self-hosted runner, the next job) can read it."""
    return [f"{job}: {step['uses']}" for job, ss in steps(doc) for step in ss
            if str(step.get("uses", "")).startswith("actions/checkout")
            and str((step.get("with") or {}).get("persist-credentials")).lower() != "false"]


def self_hosted(job):
    return "labels" in str(job.get("runs-on")) or "self-hosted" in str(job.get("runs-on"))


def forks_on_self_hosted(doc):
    """Self-hosted jobs a fork's pull request can start: a fork's code on the board."""
    if not triggers(doc) & {"pull_request", "pull_request_target"}:
        return []
    same_repo = "github.event.pull_request.head.repo.full_name == github.repository"
    return [name for name, job in (doc.get("jobs") or {}).items()
            if self_hosted(job) and same_repo not in str(job.get("if", ""))
            and "workflow_dispatch" not in str(job.get("if", ""))]


def board_jobs_cancelled(doc):
    """Board jobs (self-hosted) in a concurrency group, or a workflow group that cancels: GitHub
    keeps one pending job per group, so a waiting pull request's job would be cancelled."""
    problems = []
    concurrency = doc.get("concurrency") or {}
    if isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") not in (False, None):
        if any("labels" in str(j.get("runs-on")) or "self-hosted" in str(j.get("runs-on"))
               for j in (doc.get("jobs") or {}).values()):
            problems.append(f"workflow concurrency cancels in progress: {concurrency.get('cancel-in-progress')}")
    for name, job in (doc.get("jobs") or {}).items():
        if ("labels" in str(job.get("runs-on")) or "self-hosted" in str(job.get("runs-on"))) and "concurrency" in job:
            problems.append(f"{name}: concurrency group {job['concurrency']}")
    return problems


def unversioned_pins(text):
    """Actions pinned by commit without the version beside it (``# v5.0.0``), which no reader
    or update tool can tell."""
    return [line.strip() for line in text.splitlines()
            if re.search(r"\buses:\s*[^./\s][^@\s]*@[0-9a-f]{40}\s*$", line)]


RULES = [privileged_checkouts, fork_code_with_write, untrusted_in_shell, unpinned, checkouts_keeping_credentials,
         forks_on_self_hosted, board_jobs_cancelled]


# -- the files keep them ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", WORKFLOWS + [ACTION], ids=lambda p: p.name)
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__name__)
def test_the_workflows_and_the_action_keep_the_rules(path, rule):
    assert rule(load(path)) == []


@pytest.mark.parametrize("path", WORKFLOWS + [ACTION], ids=lambda p: p.name)
def test_every_pinned_action_says_its_version(path):
    text = path.read_text(encoding="utf-8")
    assert re.search(r"uses:\s*\S+@[0-9a-f]{40}\s+# v\d", text) or "uses:" not in text.replace("#   - uses:", "")
    assert unversioned_pins(text) == []


def test_the_rerecording_job_runs_on_boards_that_never_run_a_pull_requests_code():
    doc = load(ROOT / ".github" / "workflows" / "perf-gate.yml")
    jobs = doc["jobs"]
    assert jobs["gate"]["runs-on"] == "${{ matrix.board.labels }}"
    assert jobs["rerecord"]["runs-on"] == "${{ matrix.board.record-labels }}"
    boards = load(INVENTORY)["boards"]
    pr = [set(b["labels"]) for b in boards]
    trusted = [set(b["record-labels"]) for b in boards]
    # a runner registered for one role can take no job of the other, on any board kind
    assert not any(t <= p for t in trusted for p in pr) and not any(p <= t for t in trusted for p in pr)
    assert all("jetson-pr" in p and "jetson-trusted" not in p for p in pr)
    assert all("jetson-trusted" in t and "jetson-pr" not in t for t in trusted)
    # only the privileged job holds the App's key, made after the suite ran, and used by one step
    assert jobs["rerecord"]["environment"] not in {jobs["gate"].get("environment"), None}
    assert "secrets." not in str(jobs["gate"]) and "default_branch" in jobs["rerecord"]["if"]
    names = [s.get("uses", "") for s in jobs["rerecord"]["steps"]]
    token = next(i for i, u in enumerate(names) if "create-github-app-token" in u)
    assert names.index("./") < token
    users = [s for s in jobs["rerecord"]["steps"] if "steps.token" in str(s)]
    run = users[0]["run"]
    assert len(users) == 1 and "gh auth setup-git" not in run and 'git -c "http.' in run
    assert not re.search(r"git (config|remote)[^\n]*(extraheader|credential|GH_TOKEN|url)", run)


def test_the_board_matrix_comes_from_the_inventory_and_its_labels_are_known():
    inventory = load(INVENTORY)
    boards = inventory["boards"]
    assert boards and len({b["name"] for b in boards}) == len(boards)
    for b in boards:
        assert set(b) >= {"name", "device", "profile", "power-mode", "jetpack", "labels", "record-labels"}, b
        assert "self-hosted" in b["labels"] and "self-hosted" in b["record-labels"] and (ROOT / "baselines" / b["profile"]).is_dir(), b
    known = set(load(ROOT / ".github" / "actionlint.yaml")["self-hosted-runner"]["labels"])
    standard = {"self-hosted", "linux", "ARM64", "X64", "macOS", "windows"}
    assert {label for b in boards for label in b["labels"] + b["record-labels"]} - standard <= known
    gate = load(ROOT / ".github" / "workflows" / "perf-gate.yml")
    assert ".github/jetson-boards.yml" in gate["jobs"]["boards"]["steps"][-1]["run"]
    for job in ("gate", "rerecord"):
        assert gate["jobs"][job]["strategy"]["matrix"]["board"] == "${{ fromJSON(needs.boards.outputs.boards) }}"
        assert any(s.get("uses") == "./" for s in gate["jobs"][job]["steps"])  # the composite action


def test_the_action_installs_the_plugin_at_a_version_and_runs_the_gate():
    action = load(ACTION)
    assert action["runs"]["using"] == "composite" and "version" in action["inputs"]
    install = action["runs"]["steps"][0]
    assert "pytest-jetson[${EXTRAS}]==${VERSION}" in install["run"] and "pip install -e" not in install["run"]
    assert install["env"]["VERSION"] == "${{ inputs.version }}"
    assert any("python -m pytest $SUITE" in s.get("run", "") for s in action["runs"]["steps"])


def test_the_comment_workflow_reads_artifacts_only_and_keeps_one_comment():
    doc = load(ROOT / ".github" / "workflows" / "perf-comment.yml")
    assert triggers(doc) == {"workflow_run"} and doc["permissions"] == {}
    (job,) = doc["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    uses = [s.get("uses", "") for s in job["steps"]]
    assert uses[0].startswith("actions/download-artifact@") and not any("checkout" in u for u in uses)
    script = job["steps"][-1]["with"]["script"]
    assert "updateComment" in script and "head_sha" in script


def test_the_rerecording_pull_request_is_opened_with_a_token_that_runs_its_checks():
    doc = load(ROOT / ".github" / "workflows" / "perf-gate.yml")
    job = doc["jobs"]["rerecord"]
    token = next(s for s in job["steps"] if "create-github-app-token" in s.get("uses", ""))
    opener = next(s for s in job["steps"] if "gh pr create" in s.get("run", ""))
    assert opener["env"]["GH_TOKEN"] == f"${{{{ steps.{token['id']}.outputs.token }}}}"
    assert "github.token" not in str(opener) and "GITHUB_TOKEN" not in str(opener)


# -- and catch what breaks them --------------------------------------------------------------------
BAD = """
on: {pull_request_target: {}, pull_request: {}}
concurrency: {group: "board-${{ matrix.device }}", cancel-in-progress: true}
jobs:
  gate:
    runs-on: [self-hosted, jetson]
    concurrency: {group: jetson-orin-nano}
    permissions: {contents: write}
    steps:
      - uses: actions/checkout@v5
        with: {ref: "${{ github.event.pull_request.head.sha }}"}
      - uses: actions/setup-python@e797f83bcb11b83ae66e0230d6156d7c80228e7c
      - run: echo "${{ github.event.pull_request.title }}"
      - run: echo "${{ github.head_ref }}"
"""


def test_each_rule_catches_a_workflow_that_breaks_it():
    doc = yaml.safe_load(BAD)
    doc["on"] = doc.pop(True)
    assert privileged_checkouts(doc) == ["gate: actions/checkout@v5"]
    assert fork_code_with_write(doc) == ["gate: contents: write"]
    assert untrusted_in_shell(doc) == ["gate: ${{ github.event.pull_request.title }}", "gate: ${{ github.head_ref }}"]
    assert unpinned(doc) == ["gate: actions/checkout@v5"]
    assert checkouts_keeping_credentials(doc) == ["gate: actions/checkout@v5"]
    assert forks_on_self_hosted(doc) == ["gate"]
    assert unversioned_pins(BAD) == ["- uses: actions/setup-python@e797f83bcb11b83ae66e0230d6156d7c80228e7c"]
    assert board_jobs_cancelled(doc) == ["workflow concurrency cancels in progress: True",
                                         "gate: concurrency group {'group': 'jetson-orin-nano'}"]
    del doc["jobs"]["gate"]["permissions"]
    assert fork_code_with_write(doc) == ["gate: no permissions (the repository default applies)"]
