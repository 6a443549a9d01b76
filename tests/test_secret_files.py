"""Which names are secrets: every kind of file that holds keys, tokens or credentials, the copies editors and
tools leave beside them, and the names that only look alike; and that the workspace matches the real, absolute
path, so no `-C` hides a folder. That a refused path is never read, listed with its contents, searched or
edited is test_workspace.py's and test_tools.py's."""

import os

import pytest

from harness.files.secret_files import is_secret, may_be_secret, original
from harness.files.workspace import PathRefused, Workspace
from tools import run_tool


@pytest.mark.parametrize("path, secret", [
    # what shells and REPLs remember, fish's and the others' beside bash's (issue 33)
    (".local/share/fish/fish_history", True), ("fish_history", True), (".zhistory", True), (".irb_history", True),
    (".pry_history", True), (".Rhistory", True), (".julia/logs/repl_history.jl", True), (".ghc/ghci_history", True),
    (".scala_history", True), (".lesshst", True), (".local/share/nushell/history.txt", True),
    (".config/nushell/history.sqlite3", True), (".local/share/atuin/history.db", True), (".duckdb_history", True),
    (".ipython/profile_default/history.sqlite", True), (".mongosh/mongosh_repl_history", True), (".dbshell", True),
    (".cqlsh_history", True), (".gdb_history", True), (".clickhouse-client-history", True), (".usql_history", True),
    (".local/share/xonsh/xonsh-1a2b.json", True), (".octave_hist", True), (".bun_repl_history", True),
    ("history.txt", False), ("docs/history.md", False),
    # zsh's other history files, bash's while it writes, vim's registers; command-line tools' logins (a user's attack)
    (".histfile", True), (".local/share/zsh/history", True), (".cache/zsh/history", True),
    (".zsh_sessions/x.history", True), (".bash_history-12345.tmp", True), (".viminfo", True),
    (".config/stripe/config.toml", True), (".config/glab-cli/config.yml", True), (".config/doctl/config.yaml", True),
    (".config/hcloud/cli.toml", True), (".fly/config.yml", True), (".config/netlify/config.json", True),
    (".config/.wrangler/config/default.toml", True), (".config/configstore/firebase-tools.json", True),
    (".config/ngrok/ngrok.yml", True), (".ngrok2/ngrok.yml", True), (".supabase/access-token", True),
    (".twilio-cli/config.json", True), (".sentryclirc", True), (".circleci/cli.yml", True),
    (".railway/config.json", True), (".config/op/config", True),
    ("config.toml", False), ("app/config.yml", False), ("src/zsh/completion.zsh", False), (".circleci/config.yml", False),
    (".env", True), (".ENV", True), (".Env", True), (".envrc", True), (".env.local", True), (".env.production", True),
    ("prod.env", True), ("config/staging.ENV", True),
    ("server.pem", True), ("tls.KEY", True), ("cert.p12", True), ("cert.pfx", True), ("release.jks", True),
    ("id_rsa", True), ("id_rsa.pub", True), ("ID_ED25519", True), ("id_ecdsa", True), ("id_dsa", True),
    (".netrc", True), ("_netrc", True), (".pgpass", True), (".git-credentials", True), (".htpasswd", True),
    (".npmrc", True), (".pypirc", True),
    (".aws/credentials", True), ("home/.AWS/Credentials", True), (".docker/config.json", True),
    (".kube/config", True), ("gcloud/application_default_credentials.json", True),
    (".env.example", False), (".env.sample", False), (".env.template", False), (".ENV.EXAMPLE", False),
    (".env.dist", False), ("environment.py", False), ("src/env.py", False), ("keys.py", False),
    ("credentials", False), ("config.json", False), ("docker/config.json", False), ("README.md", False),
    ("monkey.txt", False), ("aws/credentials.md", False),
    # repository configs: remote URLs with tokens, CI's `http.extraheader = AUTHORIZATION: basic ...`
    (".git/config", True), (".GIT/CONFIG", True), ("vendor/lib/.git/config", True), (".hg/hgrc", True),
    # registries, clouds, clusters, infrastructure state
    (".dockercfg", True), ("credentials.json", True), ("keys/Service-Account-prod.json", True),
    ("my_service_account.json", True), ("kubeconfig", True), ("KUBECONFIG", True), ("prod.kubeconfig", True),
    ("terraform.tfstate", True), ("infra/terraform.tfstate.backup", True), ("terraform.tfvars", True),
    ("prod.auto.tfvars", True), ("secrets.tfvars.json", True), (".config/gh/hosts.yml", True),
    (".azure/accessTokens.json", True), (".azure/sub/msal_token_cache.bin", True), (".cargo/credentials", True),
    (".cargo/credentials.toml", True), (".terraform.d/credentials.tfrc.json", True), (".gem/credentials", True),
    (".vault-token", True), (".s3cfg", True), (".boto", True),
    # ssh and gpg folders: every file in them
    (".gnupg/secring.gpg", True), (".gnupg/private-keys-v1.d/ABC.key", True), ("home/.GnuPG/pubring.kbx", True),
    ("secring.gpg", True), (".ssh/config", True), (".ssh/known_hosts", True), ("a/.ssh/deploy", True),
    (".ssh/notes.example", True), ("key.ppk", True),
    # backups of secrets
    ("key.pem.bak", True), ("server.KEY.orig", True), ("id_rsa~", True), (".env.backup", True),
    (".key.pem.swp", True), ("credentials.json.old", True),
    # templates, and names that only look alike
    ("terraform.tfvars.example", False), (".env.example.bak", False), ("notes.bak", False), ("main.tf", False),
    ("kubeconfig.go", False), ("service_account.py", False), ("gh/hosts.md", False), ("ssh/config", False),
    (".gitignore", False), (".github/workflows/ci.yml", False), ("git/config", False), ("cargo/credentials.rs", False),
    # issue 16, item 8: editor copies, git's own credential store, gcloud's legacy keys, Wrangler, Streamlit
    ("#.env#", True), (".#.env", True), ("home/.config/git/credentials", True), ("git/credentials", True),
    (".config/gcloud/legacy_credentials/me@example.com/adc.json", True),
    ("legacy_credentials/me@example.com/.boto", True), (".dev.vars", True), (".dev.vars.staging", True),
    (".streamlit/secrets.toml", True), ("secrets.toml", True),
    # the second attack: more copies, and more kinds
    (".env.swp", True), (".id_rsa.swp", True), (".env.swo", True), ("#key.pem#", True), ("~$key.pem", True),
    ("credentials (1).json", True), (".env copy", True), ("key - Copy.pem", True), ("key.pem.1", True),
    (".env.tmp", True), ("terraform.tfstate.2", True), ("id_ed25519___jb_old___", True), ("server.key.orig~", True),
    (".my.cnf", True), (".gitcookies", True), ("auth.json", True), (".m2/settings.xml", True), ("rclone.conf", True),
    ("prod-firebase-adminsdk-ab12c.json", True), (".oci/config", True), ("AuthKey_ABC123.p8", True),
    ("vault.kdbx", True), ("login.keychain-db", True), ("secrets.yaml", True), (".secrets", True), ("wp-config.php", True),
    ("local.settings.json", True), (".terraformrc", True), (".config/hub", True), (".gradle/gradle.properties", True),
    (".ssh.bak/id_work", True), ("backup/.gnupg (1)/pubring.kbx", True), (".dev.vars.example", False), ("secrets.toml.example", False), ("#notes.md#", False), ("notes.md.swp", False),
    ("settings.xml", False), ("gradle.properties", False), ("secrets.py", False), ("config (1).json", False),
    ("python3.11", False), ("copy", False), ("#", False), (".bak", False), ("hub", False), ("auth.py", False),
])
def test_secret_names_are_matched_case_insensitively(path, secret):
    assert is_secret(path) is secret
    # the quick look at one name that the search for secret files starts with never passes one over
    assert not secret or any(may_be_secret(part) for part in path.split("/"))


@pytest.mark.parametrize("copy, name", [("#.env#", ".env"), (".#.env", ".env"), ("key.pem.bak~", "key.pem"),
                                        ("credentials (1).json", "credentials.json"), ("key - copy.pem", "key.pem"),
                                        (".env.swp", ".env"), ("notes.md", "notes.md"), ("#", "#"), ("~", "~")])
def test_a_copy_is_known_by_the_file_it_was_made_of(copy, name):
    assert original(copy) == name


@pytest.mark.parametrize("folder, name", [(".ssh", "deploy_key"), (".aws", "credentials"), (".config/git", "credentials"),
                                          (".config/gcloud/legacy_credentials/me@example.com", "adc.json"),
                                          (".gnupg/private-keys-v1.d", "ABC.key.txt"), (".azure", "notes.txt")])
def test_no_workspace_root_hides_the_folder_a_secret_is_in(tmp_path, folder, name):
    """plainagent -C ~/.ssh: the key's path relative to the workspace is a bare name, its real path is not."""
    root = tmp_path / "home" / folder
    root.mkdir(parents=True)
    (root / name).write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (root / "link.txt").symlink_to(root / name)
    ws = Workspace(root)
    for path in (name, "link.txt"):
        with pytest.raises(PathRefused) as refused:
            ws.resolve(path)
        assert refused.value.reason == "may hold secrets"
    result = run_tool(ws, "read_file", {"path": name})
    assert not result.ok and "BEGIN OPENSSH" not in result.output and "may hold secrets" in result.output


def test_a_workspace_beside_a_secret_folder_is_not_refused(tmp_path):
    root = tmp_path / "projects" / "ssh-tools"
    root.mkdir(parents=True)
    (root / "deploy.py").write_text("print(1)\n")
    assert run_tool(Workspace(root), "read_file", {"path": "deploy.py"}).ok
    assert os.listdir(root) == ["deploy.py"]
