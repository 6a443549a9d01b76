"""Which files may hold secrets, by what they are: the table `Workspace.confine` checks every path against.

The failure it prevents is a secret sent to the model: a `.env`, a private key, cloud credentials, a
registry token, Terraform state, a copy of any of these an editor or a tool left beside it (`key.pem.bak`,
`#.env#`, `.env.swp`, `credentials (1).json`), or a harmless name that is a link to one (`confine` checks the
link's target too). A file named here is not read, listed with its contents, searched or edited by any tool;
AGENTS.md that leads to one is not loaded. The path checked is the absolute one, so a folder above the
workspace counts too: with `-C ~/.ssh` every file is still in `.ssh/`. Templates that only name the variables
(`.env.example`) are not secrets. Matching is by name only: a secret pasted into `notes.txt` is not found here
(the API key itself is redacted from every result, see `redaction.py`).
"""

from __future__ import annotations

import fnmatch
import functools
import re

# Files that hold secrets, matched case-insensitively (on macOS and Windows `.ENV` is `.env` itself). A pattern
# matches the file's name; one with a "/" matches the path's last components (".aws/credentials" in any
# folder); one ending in "/**" matches every file under a folder of that name, at any depth.
SECRET_NAMES = [
    # dotenv files: .env.local, .envrc, prod.env; Cloudflare's .dev.vars; Streamlit's and others' secrets files
    ".env*", "*.env", ".dev.vars*", ".secrets", "*.secret", "*.secrets", "secret*.toml", "secret*.json",
    "secret*.yaml", "secret*.yml", "secret*.ini", "secret*.conf", "secret*.properties", "local.settings.json",
    # private keys and key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.p8", "*.kdbx", "*.keychain*",
    # ssh and gpg: keys, and everything else in their folders (configs name hosts and key files)
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".ssh/**", ".gnupg/**", "secring.gpg",
    # passwords and tokens in plain text
    ".netrc", "_netrc", ".pgpass", ".my.cnf", ".mylogin.cnf", ".git-credentials", "git/credentials", ".gitcookies",
    ".htpasswd", ".vault-token", ".s3cfg", ".boto", "rclone.conf", "wp-config.php",
    # repository configs: remote URLs with tokens, `http.extraheader = AUTHORIZATION: ...` (CI checkouts)
    ".git/config", ".hg/hgrc",
    # package registries: a token next to harmless settings (`_authToken=`, `password =`)
    ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".dockercfg",
    ".docker/config.json", "auth.json", ".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties",
    # cloud accounts: AWS, Azure, Google Cloud (user, legacy and service-account keys), Oracle, GitHub CLI, hub,
    # Terraform Cloud
    ".aws/credentials", ".azure/**", "application_default_credentials.json", "credentials.db", "access_tokens.db",
    "legacy_credentials/**", "credentials.json", "*service-account*.json", "*service_account*.json",
    "*firebase-adminsdk*.json", ".oci/**", "gh/hosts.yml", ".config/hub", ".terraform.d/credentials.tfrc.json",
    ".terraformrc", "terraform.rc",
    # clusters
    ".kube/config", "kubeconfig", "*.kubeconfig", "kubeconfig.yaml", "kubeconfig.yml",
    # Terraform state and variables hold every secret a deployment used, in plain text
    "*.tfstate", "*.tfvars", "*.tfvars.json",
    # what shells and REPLs remember: `export TOKEN=...`, `curl -H "Authorization: ..."` typed once
    ".bash_history", ".zsh_history", ".sh_history", ".history", ".python_history", ".psql_history",
    ".mysql_history", ".sqlite_history", ".node_repl_history", ".rediscli_history", "fish_history", ".zhistory",
    "nushell/history.*", "atuin/history.db", "xonsh/xonsh-*.json", ".irb_history", ".pry_history", ".rhistory",
    "repl_history.jl", "ghci_history", ".scala_history", ".lesshst", ".duckdb_history", "ipython/**/history.sqlite",
    "profile_*/history.sqlite", ".mongosh/**", ".dbshell", ".cqlsh_history", "cqlsh_history", ".gdb_history",
    ".clickhouse-client-history", ".usql_history", ".octave_hist", ".bun_repl_history", "deno_history.txt",
    ".histfile", "zsh/history", ".zsh_sessions/**", ".bash_history-*", ".viminfo",  # zsh's other homes, bash's temp
    # command-line tools' logins: Stripe, GitLab, DigitalOcean, Hetzner, Fly.io, Netlify, Cloudflare, Firebase,
    # ngrok, Supabase, Twilio, Sentry, CircleCI, Railway, 1Password
    "stripe/config.toml", "glab-cli/config.yml", "doctl/config.yaml", "hcloud/cli.toml", ".fly/config.yml",
    "netlify/config.json", ".wrangler/config/*.toml", "configstore/firebase-tools.json", "ngrok/ngrok.yml",
    ".ngrok2/ngrok.yml", ".supabase/access-token", ".twilio-cli/config.json", ".sentryclirc", ".circleci/cli.yml",
    ".railway/config.json", "op/config",
    # tools' own logins: pass, Claude Code, GitHub Copilot, AWS SSO, Kaggle, Databricks, Hugging Face, Firebase
    ".password-store/**", ".claude/.credentials.json", "github-copilot/**", ".aws/sso/cache/*.json",
    ".aws/cli/cache/*.json", "kaggle.json", ".databrickscfg", "huggingface/token", ".huggingface/token",
    "serviceaccountkey.json",
    # pip's configuration: an index URL with a password or token in it (`https://user:token@host/simple`)
    "pip.conf", "pip.ini",
]
# A copy an editor or a tool leaves beside a file holds what the file holds: the name without what the copy
# adds before (`#.env#` and `.#.env` of Emacs, `~$` of Office) or after it (`~`, `.bak`, `.swp` of vim, `.1`
# of a rotation, ` (1)` of a browser, ` copy` of Finder, `___jb_old___` of JetBrains).
COPY_MARKS = re.compile(r"^(?:#|\.#|~\$)|(?:~|#|\.(?:bak|backup|old|orig|save|sav|tmp|temp|rej|sw[a-p]|kate-swp"
                        r"|crswap|dpkg-\w+|rpm(?:new|save|orig)|\d+)|___jb_\w+___)$| (?:- copy|copy(?: \d+)?|\(\d+\))"
                        r"(?=\.[^.]*$|$)")
# Templates that document the variables without values: the model may read these.
NOT_SECRET_SUFFIXES = (".example", ".sample", ".template", ".dist")
# The table as one regular expression for each number of components a pattern names, and one for the folders.
FOLDERS = re.compile("|".join(fnmatch.translate(pattern[:-3]) for pattern in SECRET_NAMES if pattern.endswith("/**")))
TAILS = {n: re.compile("|".join(fnmatch.translate(pattern) for pattern in SECRET_NAMES
                                if pattern.count("/") == n and not pattern.endswith("/**")))
         for n in {pattern.count("/") for pattern in SECRET_NAMES if not pattern.endswith("/**")}}

# What each pattern's last name must hold, whatever a copy added around it: ".env*" -> ".env", "id_rsa*" -> "id_rsa".
# (Only the shortest: a name holding "credentials.json" holds "credentials"; a short pattern compiles in 1 ms, not 3.)
LAST_NAMES = {pattern.removesuffix("/**").rsplit("/", 1)[-1] for pattern in SECRET_NAMES}
LITERALS = {max(re.split(r"[*?\[\]]", name), key=len) for name in LAST_NAMES}
FRAGMENTS = sorted(literal for literal in LITERALS if not any(other in literal for other in LITERALS - {literal}))


def is_secret(path: str) -> bool:
    """Whether a file may hold secrets, by its path (best the absolute one) or its name: ".env" -> True."""
    parts = path.lower().split("/")
    if any(FOLDERS.match(original(part)) for part in parts[:-1]):  # .ssh.bak/ is .ssh/ too
        return True
    name = original(parts[-1])
    if name.endswith(NOT_SECRET_SUFFIXES):
        return False
    # vim names the swap file of `id_rsa` `.id_rsa.swp`: the name without the dot it added is tried too
    names = {name, name[1:]} if name != parts[-1] and name.startswith(".") else {name}
    return any(tail.match("/".join(parts[len(parts) - 1 - n:-1] + [candidate])) for n, tail in TAILS.items()
               for candidate in names if len(parts) > n)


def may_be_secret(name: str) -> bool:
    """A quick look at one name, False only where no path ending in it is secret: the search for secret files
    (secret_search.py) looks at every name in the home folder, and is_secret takes twenty times longer."""
    return bool(fragments().search(name.lower()))


@functools.cache
def fragments() -> re.Pattern:
    return re.compile("|".join(map(re.escape, FRAGMENTS)))


def original(name: str) -> str:
    """The name of the file a copy was made of: "#.env#" -> ".env", "key.pem.bak~" -> "key.pem"."""
    while (shorter := COPY_MARKS.sub("", name, count=1)) not in (name, ""):
        name = shorter
    return name
