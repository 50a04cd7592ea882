"""A stand-in for huggingface_hub's HfApi: the publishing tests never call the Hub."""

import shutil
from pathlib import Path

from training.release import assembly


class FakeApi:
    """Stands in for HfApi: records each call; `fail` maps a method name to the exception it raises."""

    def __init__(self, user="alice", orgs=("attention-lab",), role="write", fail=None, existing=None):
        self.user, self.orgs, self.role = user, orgs, role
        self.fail = fail or {}
        self.existing = existing  # model repos that exist (None: all of them)
        self.calls: list[tuple[str, tuple, dict]] = []
        self.uploaded_files: list[str] | None = None
        self.uploaded_copy: Path | None = None

    def _record(self, name, args, kwargs):
        self.calls.append((name, args, kwargs))
        if name in self.fail:
            raise self.fail[name]

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def call(self, name) -> tuple[tuple, dict]:
        (found,) = [c for c in self.calls if c[0] == name]
        return found[1], found[2]

    def whoami(self, *args, **kwargs):
        self._record("whoami", args, kwargs)
        return {
            "type": "user",
            "name": self.user,
            "orgs": [{"name": o} for o in self.orgs],
            "auth": {"type": "access_token", "accessToken": {"role": self.role}},
        }

    def repo_exists(self, repo_id, **kwargs):
        self._record("repo_exists", (repo_id,), kwargs)
        return self.existing is None or repo_id in self.existing

    def create_repo(self, repo_id, **kwargs):
        self._record("create_repo", (repo_id,), kwargs)
        prefix = "spaces/" if kwargs.get("repo_type") == "space" else ""
        return f"https://huggingface.co/{prefix}{repo_id}"

    def create_branch(self, repo_id, **kwargs):
        self._record("create_branch", (repo_id,), kwargs)

    def add_space_variable(self, repo_id, key, value, **kwargs):
        self._record("add_space_variable", (repo_id, key, value), kwargs)

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        self.uploaded_files = assembly.list_files(folder)  # the folder is deleted once main returns
        self.uploaded_copy = Path(str(folder) + "-as-uploaded")
        shutil.copytree(folder, self.uploaded_copy)
        self._record("upload_folder", (), kwargs)
        return type("CommitInfo", (), {"commit_url": f"https://huggingface.co/{kwargs['repo_id']}/commit/abc"})()
