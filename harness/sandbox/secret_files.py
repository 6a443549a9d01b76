"""Which files may hold secrets, by their names: the table `Workspace.confine` checks every path against.

The failure it prevents is a secret sent to the model: a `.env`, a private key, cloud credentials, a
registry token, Terraform state, a backup of any of these (`key.pem.bak`), or a harmless name that is a
link to one (`confine` checks the link's target too). A file named here is not read, listed with its
contents, searched or edited by any tool; AGENTS.md that leads to one is not loaded. Templates that only
name the variables (`.env.example`) are not secrets. Matching is by name only: a secret pasted into
`notes.txt` is not found here (the API key itself is redacted from every result, see `redaction.py`).
"""

from __future__ import annotations

import fnmatch

# Files that hold secrets, matched case-insensitively (on macOS and Windows `.ENV` is `.env` itself). A pattern
# matches the file's name; one with a "/" matches the path's last components (".aws/credentials" in any
# folder); one ending in "/**" matches every file under a folder of that name, at any depth.
SECRET_NAMES = [
    # dotenv files: .env.local, .envrc, prod.env
    ".env*", "*.env",
    # private keys and key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk",
    # ssh and gpg: keys, and everything else in their folders (configs name hosts and key files)
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".ssh/**", ".gnupg/**", "secring.gpg",
    # passwords and tokens in plain text
    ".netrc", "_netrc", ".pgpass", ".git-credentials", ".htpasswd", ".vault-token", ".s3cfg", ".boto",
    # repository configs: remote URLs with tokens, `http.extraheader = AUTHORIZATION: ...` (CI checkouts)
    ".git/config", ".hg/hgrc",
    # package registries: a token next to harmless settings (`_authToken=`, `password =`)
    ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".dockercfg", ".docker/config.json",
    # cloud accounts: AWS, Azure, Google Cloud (user and service-account keys), GitHub CLI, Terraform Cloud
    ".aws/credentials", ".azure/**", "application_default_credentials.json", "credentials.db",
    "access_tokens.db", "credentials.json", "*service-account*.json", "*service_account*.json",
    "gh/hosts.yml", ".terraform.d/credentials.tfrc.json",
    # clusters
    ".kube/config", "kubeconfig", "*.kubeconfig", "kubeconfig.yaml", "kubeconfig.yml",
    # Terraform state and variables hold every secret a deployment used, in plain text
    "*.tfstate", "*.tfvars", "*.tfvars.json",
]
# A backup of a secret is the secret: key.pem.bak, .env~, terraform.tfstate.backup.
BACKUP_SUFFIXES = (".bak", ".backup", ".old", ".orig", ".save", ".swp", "~")
# Templates that document the variables without values: the model may read these.
NOT_SECRET_SUFFIXES = (".example", ".sample", ".template", ".dist")


def is_secret(path: str) -> bool:
    """Whether a file may hold secrets, by its path relative to the root (or its name): ".env" -> True."""
    parts = without_backup_suffixes(path.lower()).split("/")
    for pattern in SECRET_NAMES:
        if pattern.endswith("/**") and any(fnmatch.fnmatchcase(part, pattern[:-3]) for part in parts[:-1]):
            return True
    if parts[-1].endswith(NOT_SECRET_SUFFIXES):
        return False
    for pattern in SECRET_NAMES:
        tail = "/".join(parts[-(pattern.count("/") + 1):])
        if fnmatch.fnmatchcase(tail, pattern):
            return True
    return False


def without_backup_suffixes(path: str) -> str:
    """"key.pem.bak~" -> "key.pem"."""
    while suffix := next((suffix for suffix in BACKUP_SUFFIXES if path.endswith(suffix)), ""):
        path = path[: -len(suffix)]
    return path
