"""Sending an assembled folder to the Hugging Face Hub: check the token and the namespace, create the repo, set the
Space's variables, upload the snapshot branches and then main, one commit each; the Hub's errors become
PublishError with the exit code of their kind."""

from pathlib import Path

from training.release.checks import EXIT_DENIED, EXIT_HUB, EXIT_INPUT, EXIT_OFFLINE, PublishError


def push(
    api,
    repo_id: str,
    folder: Path,
    repo_type: str,
    private: bool,
    message: str,
    variables: dict[str, str] | None = None,
    models: list[str] = (),
    branches: dict[str, Path] | None = None,
) -> None:
    """Check the token, create the repo if needed, (set the Space's variables,) upload `folder` in one commit;
    `branches` ({name: folder}, a model's snapshots) go up before it, one commit each."""
    who = hub_call(api.whoami, "checking the token")
    check_namespace(who, repo_id)
    for model in models:
        if not hub_call(lambda m=model: api.repo_exists(m, repo_type="model"), f"looking up {model}"):
            raise PublishError(
                EXIT_INPUT,
                f"the model repo {model} does not exist (or is not visible with this token): publish it first",
            )
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}
    url = hub_call(
        lambda: api.create_repo(
            repo_id, repo_type=repo_type, private=True if private else None, exist_ok=True, **extra
        ),
        f"creating the {repo_type} repo {repo_id}",
    )
    upload_branches(api, repo_id, url, branches or {})
    set_vars = []
    try:
        for key, value in (variables or {}).items():
            api.add_space_variable(repo_id, key, value, description="model the app loads: a Hub repo id or a folder")
            set_vars.append(key)
        # delete_patterns="*": files of an earlier upload that this folder no longer has go away in the same
        # commit (.gitattributes stays), so the repo holds exactly this folder.
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            repo_type=repo_type,
            commit_message=message,
            delete_patterns="*",
        )
    except Exception as e:
        err = hub_error(e, f"uploading to {repo_id}")
        raise PublishError(
            err.code,
            f"{err}. The repo {url} exists, but nothing was uploaded: its files are none, or unchanged if it "
            f"existed before{' (its variables ' + ', '.join(set_vars) + ' were set)' if set_vars else ''}. "
            "Fix the cause and run the same command again.",
        ) from e
    print(f"published {repo_id}: {url}")
    if getattr(commit, "commit_url", None):
        print(f"commit: {commit.commit_url}")
    for key, value in (variables or {}).items():
        print(f"Space variable {key}={value}")


def upload_branches(api, repo_id: str, url: str, branches: dict[str, Path]) -> None:
    """Create each branch (from main, if it is not there) and upload its folder to it, replacing what it held."""
    done = []
    for branch, folder in branches.items():
        try:
            api.create_branch(repo_id, branch=branch, exist_ok=True)
            api.upload_folder(
                repo_id=repo_id,
                folder_path=str(folder),
                revision=branch,
                commit_message=f"Upload the snapshot {branch}",
                delete_patterns="*",
            )
        except Exception as e:
            err = hub_error(e, f"uploading the branch {branch} to {repo_id}")
            pushed = f"the branches {', '.join(done)} were uploaded" if done else "no branch was uploaded"
            raise PublishError(
                err.code, f"{err}. The repo {url} exists; {pushed}, main is unchanged. Run the same command again."
            ) from e
        done.append(branch)
        print(f"published {repo_id}@{branch}")


def hub_call(fn, doing: str):
    """fn(), with Hub errors turned into PublishError (nothing has been created when this fails)."""
    try:
        return fn()
    except Exception as e:
        err = hub_error(e, doing)
        raise PublishError(err.code, f"{err}; nothing was created or uploaded") from e


def hub_error(e: Exception, doing: str) -> PublishError:
    """A PublishError saying what went wrong while `doing`: permission, connection, or another Hub answer."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        if status == 401:
            return PublishError(
                EXIT_DENIED,
                f"the Hub rejected the token while {doing} (401 Unauthorized): it is invalid or expired; "
                "set HF_TOKEN to a valid token or log in again with `hf auth login`",
            )
        if status == 403:
            return PublishError(
                EXIT_DENIED,
                f"permission denied while {doing} (403 Forbidden): the token cannot write there; use a token "
                f"with write access to that namespace ({first})",
            )
        return PublishError(EXIT_HUB, f"the Hub answered {status} while {doing}: {first}")
    if isinstance(e, (OfflineModeIsEnabled, ConnectionError, TimeoutError)) or _is_transport_error(e):
        return PublishError(
            EXIT_OFFLINE, f"cannot reach the Hugging Face Hub while {doing} ({type(e).__name__}: {e}); are you offline?"
        )
    return PublishError(EXIT_HUB, f"{doing} failed: {type(e).__name__}: {e}")


def _is_transport_error(e: Exception) -> bool:
    try:
        import httpx2  # what huggingface_hub 2.x sends requests with
    except ImportError:
        return False
    return isinstance(e, httpx2.TransportError)


def check_namespace(who: dict, repo_id: str) -> None:
    """Refuse early when the token is read-only, or belongs to someone who cannot write to repo_id's namespace."""
    if not isinstance(who, dict) or not who.get("name"):
        return  # an unfamiliar answer: let create_repo decide
    role = ((who.get("auth") or {}).get("accessToken") or {}).get("role")
    if role == "read":
        raise PublishError(
            EXIT_DENIED,
            f"permission denied: the token of {who['name']} is read-only; create one with write access at "
            "https://huggingface.co/settings/tokens. Nothing was created or uploaded.",
        )
    namespace = repo_id.split("/")[0]
    mine = {who["name"]} | {o.get("name") for o in who.get("orgs") or [] if isinstance(o, dict)}
    if namespace not in mine:
        raise PublishError(
            EXIT_DENIED,
            f"permission denied: the token belongs to {who['name']}, who cannot write to '{namespace}' "
            f"(yours: {', '.join(sorted(n for n in mine if n))}). Nothing was created or uploaded.",
        )
