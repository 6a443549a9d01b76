"""Which names are secrets: every kind of file that holds keys, tokens or credentials, their backups, and
the names that only look alike. That a refused path is never read, listed with its contents, searched or
edited is test_workspace.py's and test_tools.py's."""

import pytest

from harness.sandbox.secret_files import is_secret


@pytest.mark.parametrize("path, secret", [
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
])
def test_secret_names_are_matched_case_insensitively(path, secret):
    assert is_secret(path) is secret
