"""Credentials known by their shape: the second net under the name table, for secrets in files it does not name.

The failure it prevents is a token sent to the model from a file nobody thought of: a shell history, an editor's
settings, a tool's login cache, a project's `nuget.config`. The name table (secret_files.py) will always trail
the tools people use; a token's shape does not: a GitHub token starts `ghp_`, an AWS key `AKIA`, a private key
`-----BEGIN … PRIVATE KEY-----`. `withhold` replaces each such value in a tool's result with a marker that says
what was there, never what it was ("[secret withheld: GitHub token]"); `Workspace.redact` applies it to every
result, after the API key, and before anything is cut or searched, so a search cannot find a token a character
at a time and a cut cannot leave half of one.

Precision first: a line withheld that holds no credential is in the way of the work and teaches people to turn
the net off. The shapes are those gitleaks and detect-secrets match with few false alarms: fixed prefixes with a
length (`SHAPES`), an AWS secret key beside its id, and values given to a name that says "secret" (`password =
…`, `"client_secret": "…"`, `npmAuthToken: …`), taken only when they look random (16 characters or more,
letters and digits), so that `password = os.environ["DB_PASSWORD"]` or `token = get_token()` stays code the
model can read and change. What has a shape and is none (a documented example, a placeholder, a fixture's
`test-token-…`, a password hash, `postgres://app:example@db`) is secret_lookalikes.py's to tell.

The marker can never match the file's own text unknowingly: `marker_in` finds it in an edit's old or new text,
and read_and_edit.py takes it for the value at its place, where old_str is at one place of the file as it was
shown, or refuses the edit with the reason, unless the file really holds those words. An edit's old_str is
matched in the file with each value `masked`, never inside one, so no run of tries can find a value a piece at a
time; and `withheld_values` before and after an edit tell read_and_edit.py whether it would show one (text joined
to it takes its shape away: `echo xsk-…`).

What a shape cannot do: know a value no shape describes (`DB_PASSWORD=Winter2024!`, `password = hunter2`: a
person's password looks like words, and taking every such line would withhold half of all config files), or stop
a command that prints a value in another form (`base64 settings.json`): the net keeps credentials out of what the
tools show, not out of reach of a command the user let run. The name table (secret_files.py: `.env` and the
rest), the kernel boundary (landlock.py) and the question before each command are what keep those.
"""

from __future__ import annotations

import re

from harness.common.secret_lookalikes import (  # MARKERS: any marker, as an edit's text may carry one back
    MARKERS,
    is_code,
    is_encrypted,
    is_example,
    is_fixture,
    is_no_key,
    is_no_secret_name,
    is_no_url_password,
    is_placeholder,
    is_public_key_id,
)

MARKER = "[secret withheld: {kind}]"  # what a value is replaced with; the kind says what it looked like

# (what it is, its shape). Each starts with a literal, which the regex engine finds fast (a leading \b would make
# it try every position: 30 times slower). Most prefixes are distinctive (`ghp_`, `AKIA`, `xoxb-`) and are taken
# wherever they are, after a letter too (`\u0022ghp_…`, `%3Dghp_…`, `\nghp_…`, `GH_TOKEN_ghp_…`): a random base64
# blob holds one with its full length about once in tens of megabytes. A short or common one (`WORD_CHECKED`:
# `sk-`, `hf_`, `SG.`) is not taken after a letter or a digit (`ask-…`, `mask_hf_…`), unless that character ends
# an escape (`\n`, `\u0022`, `%3D`). A shape with a lookbehind of its own (`(?<=`) says itself what comes before it.
# A private key's line break: a real one, or a `\n` escape (one-line JSON), and what wraps its lines in code: the
# quotes and `+` of a string concatenation (`"MIIE…\n" +`), a comment's `#`, `//`, `;` or `*`; or what a command
# or a reply puts before each line of a file (`LINE_PREFIX`), which took all but the first line out of the key.
# cat -n's `     2\t`; grep's `2:`, `dir/key.pem:2:` and context lines' `key.pem-2-`; an email's or Markdown's `> `.
# Its runs of spaces are possessive: tried at every split, a BEGIN line and a line of 400 spaces took 17 s.
LINE_PREFIX = r"""(?:\d{1,9}\t|(?:[^\s:]{1,200}?[:-])?\d{1,9}[:-]|>[ \t>]*+)"""
KEY_BREAK = (r"""(?:(?:\\r)?\\n(?:["']?[ \t]*+[+,]?[ \t]*+\r?\n[ \t]*+(?:[#;*]|//)?[ \t]*+["']?)?"""
             rf"""|["']?[ \t]*+[+,\\]?[ \t]*+\r?\n[ \t]*+(?:[#;*]|//|{LINE_PREFIX})?[ \t]*+["']?)""")
# A line of its body: all base64, blank, or a header (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: AES-128-CBC,…`, PGP's).
KEY_LINE = (r"""(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n"'\\]{0,200}+"""
            r"""|[A-Za-z0-9+/=]++(?=["'\\\r\n]|[ \t]*(?:[+,][ \t]*)?(?:\r?\n|\Z))|(?=\r?\n))""")
# A line of a body with no BEGIN line before it: base64 of 16 characters or more, or a last one with its "=".
BODY_LINE = (r"""(?:[A-Za-z0-9+/]{16,}+={0,2}|[A-Za-z0-9+/]{1,15}+={1,2})"""
             r"""(?=["'\\\r\n]|[ \t]*(?:[+,][ \t]*)?(?:\r?\n|\Z))""")
DISCORD_ID = "(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5])"  # three ASCII digits in base64
DISCORD_END = "[MNO][DTjz][AEIMQUYcgk]"  # two more
KEY_END = r"-----(?i:END)[ A-Za-z0-9_-]{0,40}(?i:PRIVATE KEY(?: BLOCK)?)-----"
SHAPES = [
    # To its END line (base64, and the headers of an encrypted one between), or line by line as long as lines are
    # all base64 (cut short, a string concatenation, commented out), if its first line is; a BEGIN line with no
    # body (`pem.startswith("-----BEGIN RSA PRIVATE KEY-----")`, a document's example) is not a key.
    ("private key", r"-----(?i:BEGIN)[ A-Za-z0-9_-]{0,40}(?i:PRIVATE KEY(?: BLOCK)?)-----"
                    rf"(?:(?:[\w+/=\s\\,:.]|-(?!----))*+{KEY_END}"
                    rf"|(?=(?:{KEY_BREAK}(?:(?:Proc-Type|DEK-Info):[^\r\n]*+)?){{1,4}}?[A-Za-z0-9+/]{{16}})"
                    rf"(?:{KEY_BREAK}{KEY_LINE})*+"
                    rf"(?:{KEY_BREAK}{KEY_END})?)"),
    ("private key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}+={0,2}"),  # in base64 (kubeconfig's client-key-data)
    ("PuTTY private key", r"Private-Lines:[ \t]*\d+(?:\r?\n[A-Za-z0-9+/=]++(?=\r?\n|\Z))++"),  # in a .ppk
    ("age secret key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("GitHub token", r"github_pat_\w{60,}"),
    ("GitLab token", r"gl(?:pat|ptt|dt|rt|cbt|ft|oas)-[\w-]{20,}"),
    ("Anthropic key", r"sk-ant-[\w-]{32,}"),
    # OpenAI's, DeepSeek's: a digit, and a run of 16 letters and digits (`sk-learn-classifier-v2-…` is words)
    ("API key", r"sk-(?:proj-|svcacct-|admin-|or-v1-)?(?=[A-Za-z_-]{0,80}+\d)(?=[\w-]{0,80}?[A-Za-z0-9]{16})"
                r"[A-Za-z0-9_-]{20,}"),
    ("Stripe key", r"sk_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("Stripe key", r"rk_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("Stripe webhook secret", r"whsec_[A-Za-z0-9]{24,}"),
    ("AWS access key", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9])"),
    ("Slack token", r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("Slack token", r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"),
    ("Slack webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[\w/+-]{20,}"),
    ("Hugging Face token", r"hf_[A-Za-z0-9]{30,}"),
    ("Hugging Face token", r"api_org_[A-Za-z0-9]{30,}"),
    ("npm token", r"npm_[A-Za-z0-9]{36,}"),
    ("PyPI token", r"pypi-AgE[\w-]{50,}"),
    ("Google API key", r"AIza[\w-]{35}(?![\w+/=-])"),  # 39 characters, no more: base64 holds `AIza` once in 16 M
    ("Google OAuth secret", r"GOCSPX-[\w-]{28}"),
    ("Google OAuth token", r"ya29\.[\w-]{20,}"),
    ("JSON web token", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("SendGrid key", r"SG\.[\w-]{22}\.[\w-]{43}"),
    ("Databricks token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("DigitalOcean token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("Shopify token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("Groq key", r"gsk_[A-Za-z0-9]{48,}"),
    ("Replicate token", r"r8_[A-Za-z0-9]{37}"),
    ("xAI key", r"xai-[A-Za-z0-9]{70,}"),
    # Vault's service, batch and recovery tokens: 24 characters or more, not after a dot (`self.hvs.…`), a digit
    # among them (`hvs.getHypervisorsList` is code; a random one of 24 has none once in 70, of 90 never).
    ("Vault token", r"hv[sbr]\.(?<!\.hv[sbr]\.)(?=[\w-]{0,300}?\d)[\w-]{24,}"),
    ("Postman key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("Linear key", r"lin_api_[A-Za-z0-9]{40}"),
    ("Notion token", r"secret_[A-Za-z0-9]{43}"),
    ("Notion token", r"ntn_[A-Za-z0-9]{40,}"),
    ("Telegram bot token", r":AA(?<=\d:AA)[\w-]{33,}"),  # after the bot's number, which stays
    ("Azure client secret", r"Q~(?<=[\w~.]{3}\dQ~)[\w~.-]{31,34}"),  # its first four characters stay
    ("Doppler token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[\w-]{1,40}\.)?[A-Za-z0-9]{40,}"),  # `dp.st.dev.…`
    ("Pulumi token", r"pul-[a-f0-9]{40}(?![\w-])"),
    # A service account's, and Grafana Cloud's (base64 JSON); one regex for both, as each is a scan of the text.
    ("Grafana token", r"gl(?:sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?![\w-])|c_eyJ[A-Za-z0-9+/]{29,400}={0,2})"),
    # An organization's (base64 JSON: its org, its URLs; `_` and a secret), and a user's.
    ("Sentry token", r"sntry(?:s_eyJ[A-Za-z0-9+/=_]{50,}|u_[a-f0-9]{64})"),
    ("Atlassian token", r"ATATT3[A-Za-z0-9_=-]{150,}"),
    ("New Relic key", r"NRAK-[A-Z0-9]{27}(?![\w-])"),
    # Shapes with a group "value" withhold only it. An Azure SAS's signature: an HMAC-SHA256, 43 characters of
    # base64 and its "=", URL-encoded or not, after `?sig=` or `&sig=`; the rest of the URL says what it grants.
    ("Azure SAS signature", r"sig=(?<=[?&;]sig=)(?P<value>(?:[A-Za-z0-9+/]|%2[BFbf]){43}(?:=|%3[Dd])?)"
                            r"(?![A-Za-z0-9+/%=])"),
    # A private key's body without its BEGIN line (pasted from the middle, a key in a variable, `base64 -w0`): it
    # starts as a key's DER does, before any random byte: a SEQUENCE, then version 0 (PKCS#8, RSA's PKCS#1) or
    # EC's and Ed25519's first bytes; or as OpenSSH's, "openssh-key-v1". A certificate's (`MIIDdzCCA…`) or public
    # key's (`MIIBIjANBg…`) goes on differently. Its lines are taken while they are base64, and its END line.
    ("private key", r"M(?:II[A-Za-z0-9+/]{2}[AQgw]IBA[AD]|I[GH][A-Za-z0-9+/]AgEA|HcCAQEE|IGkAgEB|C4CAQAwBQYDK2Vw)"
                    rf"[A-Za-z0-9+/]{{40,}}+={{0,2}}(?:{KEY_BREAK}{BODY_LINE})*+(?:{KEY_BREAK}{KEY_END})?"),
    ("private key", rf"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{{40,}}+={{0,2}}(?:{KEY_BREAK}{BODY_LINE})*+"
                    rf"(?:{KEY_BREAK}{KEY_END})?"),
    # A Discord bot token after its first part, the bot's id (17 to 20 digits) in base64, which stays: it is
    # public, as a Telegram bot's number is. Found from its first dot (a literal, fast; starting from the id's
    # `[MNO]` took 27 ms a MB), the id checked behind it: every 4 of its characters have the forms of DISCORD_ID.
    ("Discord bot token", r"\.[\w-]{6}\.(?:" + "|".join(rf"(?<=(?<![\w-]){DISCORD_ID}{{{n}}}{end}\.[\w-]{{6}}\.)"
                                                      for n, end in [(6, ""), (6, "[MNO][AQgw]"), (5, DISCORD_END),
                                                                     (6, DISCORD_END)])
                          + r")[\w-]{27,38}(?![\w-])"),
    ("Mailgun key", r"key-[0-9a-f]{32}(?![0-9A-Za-z])"),
    # Square's: EAAA and 60 characters, no more (a run of zero bytes in base64 is `AAAA`, `EAAA` after a 0x10,
    # and a blob never ends just there).
    ("Square token", r"EAAA(?<![+/]EAAA)[\w-]{60}(?![\w+/=-])"),
    ("Square token", r"sq0(?:atp-[\w-]{22}|csp-[\w-]{43})(?![\w-])"),
]
COMPILED = [(kind, re.compile(shape)) for kind, shape in SHAPES]
AWS_ACCESS_KEY = re.compile(dict(SHAPES)["AWS access key"])
# An AWS secret key: 30 random bytes in base64, so 40 characters and both cases (a hash's hex has one).
AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/=])(?=[A-Za-z0-9+/]{0,39}[A-Z])(?=[A-Za-z0-9+/]{0,39}[a-z])"
                        r"[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
WORD_CHECKED = {"API key", "Hugging Face token", "Notion token", "SendGrid key", "Replicate token", "Mailgun key",
                "Square token", "Vault token", "Pulumi token"}
ESCAPE_BEFORE = re.compile(r"(?:\\[nrtbf]|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|%[0-9A-Fa-f]{2})\Z")
ALPHANUMERIC = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
# A value given to a name that says it is secret: `GITHUB_TOKEN=…`, `"accessToken": "…"`, `password = …`,
# `<add key="ClearTextPassword" value="…"/>` (nuget.config), `Authorization: Bearer …`. Only the value is
# withheld; the name, the quotes and the rest of the line stay, so the model still sees what the line is.
# Found where a name ends in one of those words and a value follows (`CANDIDATE`, on the lowered text: a
# case-insensitive regex that tried every position took 0.3 s a megabyte), then matched from the start of the
# name, at most NAME_MAX_CHARS before. Values stop at their first delimiter and never backtrack (possessive), so
# a text of nothing but `token=token=…` costs a few characters a name, not a scan to the end of each.
NAME_MAX_CHARS = 100
CANDIDATE = re.compile(r"""(?:pass|secret|token|key|auth|credential)[\w.-]{0,12}+\\?["']?[ \t]*"""
                       r"""(?:[:=]|["']?[ \t]+value[ \t]*=)""")
# `db_pass` and `MYSQL_ROOT_PASS` are passwords, `bypass` and `compass` are not; `next_page_token` is no credential.
SECRET_NAME = re.compile(r"(?:password|passwd|(?:^|[_.-])pass(?:phrase)?|secret|(?<!page)(?<!page[_-])token"
                         r"|(?:api|access|private|secret|account|client|auth|signing|encryption|master)[_-]?key"
                         r"|apikey|auth|authident|credentials?|authorization)$")
# Quoted, a value runs to its quote, whatever it holds (`"Kp3(Zr8 x;…"`, JSON's `\/`); unquoted, to a delimiter
# (`&`: a URL's query, `?access_token=…&q=1`), or to the end of its line where the name starts one (`LINE_NAMED`).
NAMED = re.compile(r"""(?ix) (?P<name>[\w.-]{1,100}) \\?["']? [ \t]* (?: [:=] | ["']?[ \t]+value[ \t]*= ) [ \t]*
                   \\?(?P<quote>["'])? (?:(?:bearer|basic|token|bot)[ \t]+)?
                   (?P<value> (?(quote) (?:[^"'\\\r\n]|\\(?!["'\r\n])){16,2000}+
                                      | [^"'\s,;<>(){}\[\]=:\\&]{16,2000}+=* ) )
                   (?(quote) (?=\\?(?P=quote)) | (?= [\\"'\s,;<>&]|$) )""")
LINE_NAMED = re.compile(r"""(?P<name>[\w.-]{1,100})(?:=|:[ \t]+)(?P<value>[^\s"'`]{16,2000}+)(?=[ \t]*(?:\r?\n|\Z))""")
LINE_START = re.compile(r"[ \t]*(?:export[ \t]+|-[ \t]+)?")  # what may come before a name that owns its line
CALL = re.compile(r"[\w.]+\(.*\)")  # `token=get_token(user2)`: code, not a value
# A password in a URL: postgres://user:pw@host, https://user:token@pypi.example/simple (pip.conf, .git/config).
# It may hold a "/" (postgres://app:Xy7/Qp2@db) and an "@" that another follows before any "/" (a password
# nobody percent-encoded: app:s3cr@t-99@db); a port and a path (https://host:8080/path@x) are not one. It stops
# at the next "://", so a text of nothing but "://a:" costs a few characters a URL, not 200.
URL_PASSWORD = re.compile(r"(?P<start>(?:://|:\\/\\/)(?P<user>[^\s:/@'\"\\]{0,100})):"
                          r"(?P<value>(?:[^\s@'\"<>:]|:(?!//|\\/\\/)|@(?=[^\s@/'\"]{1,200}@)){3,200}+)(?=@)")
# A password given on a command line: `--password …`, `--password=…`, `mysql -uroot -p…`; in an XML element
# named as one: `<password>Xy7…</password>`; and a .netrc's, after the word `password` on a machine's line (or
# the lines after it), where only a random-looking one is taken (`NETRC`). (kind, where, a word it cannot be
# without.) A plain lowercase word after `--password` is prose ("the --username and --password options").
FLAGGED = [
    ("a password on a command line", re.compile(r"--password(?:=|[ \t]+)['\"]?(?![a-z]++(?![^\s'\"`;|&]))"
                                                r"(?P<value>[^\s'\"`;|&]{4,200}+)"), "--password"),
    ("a password in a .netrc", re.compile(r"machine[ \t]+[^\s]{1,200}+(?:\s{1,20}+(?:login|account)[ \t]+"
                                          r"[^\s]{1,200}+)*+\s{1,20}+password[ \t]+(?P<value>[^\s]{8,200}+)"),
     "machine"),
    ("a password on a command line", re.compile(r"(?:mysql|mariadb)[\w-]{0,6}+[ \t][^\n;|&]{0,200}?(?<=[ \t])-p"
                                                r"(?P<value>[^\s'\"`;|&]{1,200}+)"), "-p"),
    ("a value named as a secret", re.compile(r"<(?P<name>[\w.:-]{0,40}(?i:password|passwd|secret|token|api_?key))>"
                                             r"(?P<value>[^<>\s]{8,2000}+)</(?P=name)>"), "</"),
]
NETRC = {"a password in a .netrc"}  # its line is no setting's: a person's password there is words, as anywhere
# A token cut short at the end of a head: a distinctive prefix after anything, as in SHAPES (GH_TOKEN_ghp_…).
# A key's body with no BEGIN line, as it starts (the shape's first characters), is cut short to the end too.
CUT_SHORT_END = re.compile(r"(?:(?:-----(?i:BEGIN)[ A-Za-z0-9_-]{0,40}(?i:PRIVATE)"
                           r"|(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{2}[AQgw]IBA|b3BlbnNzaC1rZXktdjE))[\s\S]*"
                           r"|(?:(?<![A-Za-z0-9])(?:sk-|hf_|eyJ|EAAA)|gh[pousr]_|github_pat_|AKIA|ASIA|xox|npm_|pypi-|AIza"
                           r"|glpat-|sq0atp-|sq0csp-)[\w.-]{0,2000}+)\Z")
# A value named as a secret, or in a URL, cut short there (`password = "Xy7Q`, `postgres://app:Xy7Q`).
CUT_VALUE_END = re.compile(r"""(?i)(?:(?:pass|secret|token|key|auth|credential)[\w.-]{0,12}+\\?["']?[ \t]*"""
                           r"""(?:[:=]|["']?[ \t]+value[ \t]*=)[ \t]*\\?["']?(?:(?:bearer|basic|token|bot)[ \t]+)?"""
                           r"""|://[^\s:/@'"]{1,100}+:)(?P<value>[^"'\s,;<>(){}\[\]=\\@]{1,2000}+)\Z""")
# A quoted one, which runs to its quote whatever it holds (`REDIS_PASSWORD="Kp3(Zr8=Lm9`).
CUT_QUOTED_END = re.compile(r"""(?i)(?:pass|secret|token|key|auth|credential)[\w.-]{0,12}+\\?["']?[ \t]*"""
                            r"""(?:[:=]|["']?[ \t]+value[ \t]*=)[ \t]*\\?["'](?:(?:bearer|basic|token|bot)[ \t]+)?"""
                            r"""(?P<value>[^"'\\\r\n]{1,2000}+)\Z""")
# The end of a private key at the start of a tail (its line breaks `\n` escapes too, in one-line JSON, its lines
# behind a LINE_PREFIX: `dir/key.pem-27-`, `> `), or its first word: the cut went through it, so it is a piece of
# something, and one that looks random (`mixed`) may be a token's last characters, however long (a JWT carrying
# roles runs to thousands).
CUT_SHORT_START = re.compile(r"(?:[\w+/=\s\\:.>]|-(?!----(?!-)))*+"
                             r"-----(?i:END)[ A-Za-z0-9_-]*(?i:PRIVATE KEY(?: BLOCK)?)-----"
                             r"|(?P<piece>[\w+/=.~-]{6,}+)(?![\w+/=.~-])")
NAME_CHARACTERS = ALPHANUMERIC | set("_-.")
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def looks_random(value: str, fill: str | None = None) -> bool:
    """Whether a value named like a secret is one: long, with letters and digits; not a ${placeholder}, a path
    (`SECRET_FILE=/run/secrets/db`), a URL or a name in code (`settings.SECRET_KEY_2024`: `is_code`); not one letter
    repeated ("xxxxxxxxxxxxxxxx1"); not a marker, nor (`masked`) a value withheld already, nor one SOPS
    encrypted; and if it holds spaces, random in each of its words ("Enter the password for user 2" is a
    sentence)."""
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and "${" not in value
            and not is_code(value)
            and not value.startswith(("/", "~", "./", "../", "$")) and "://" not in value
            and len(set(value)) >= 8 and not MARKERS.search(value) and (fill is None or fill not in value)
            and (" " not in value and "\t" not in value or all(mixed(word) for word in value.split()))
            and not is_fixture(value) and not is_encrypted(value))


def withhold(text: str, *, cut_before: bool = False, cut_after: bool = False,
             found: list[tuple[str, str]] | None = None, fill: str | None = None) -> str:
    """The text with every value shaped like a credential replaced by a marker saying what it was. Where a text
    was cut (a command's output kept as a head and a tail), a token cut short there is withheld too. Each value
    withheld is added to `found` as (kind, value), when given (`withheld_values`); with a `fill` character, each
    of its characters but line breaks is replaced by that one instead of a marker (`masked`).

    >>> withhold('token = "ghp_' + 'a1' * 18 + '"')
    'token = "[secret withheld: GitHub token]"'
    """
    found = [] if found is None else found
    text = withhold_aws_secrets(text, found, fill)  # before its access key id, which says where to look, is withheld
    for kind, shape in COMPILED:
        text = shape.sub(lambda match, kind=kind: match[0] if continues_word(kind, match) or is_no_key(match[0])
                         or is_example(match[0]) else shape_withheld(kind, match, found, fill), text)
    text = withhold_named(text, found, fill)
    for kind, flagged, word in FLAGGED:
        if word in text:
            text = flagged.sub(lambda match, kind=kind: match[0] if is_placeholder(match["value"], fill)
                               or kind in NETRC and not looks_random(match["value"], fill) else
                               text_around(match, marker(kind, match["value"], found, fill)), text)
    if "://" in text or ":\\/\\/" in text:
        text = URL_PASSWORD.sub(lambda match: match[0] if is_no_url_password(match)
                                or is_placeholder(match["value"], fill)
                                else f"{match['start']}:{marker('password in a URL', match['value'], found, fill)}",
                                text)
    if cut_after:  # the head of a cut output ends inside a token: what shows of it is cut short of its shape
        end = max(0, len(text) - 8000)  # a private key cut short is the longest: RSA 4096's is 3,300 characters
        head = CUT_SHORT_END.sub(MARKER.format(kind="a token cut short"), text[end:])
        if values := [value.start("value") for value in (CUT_VALUE_END.search(head), CUT_QUOTED_END.search(head))
                      if value]:
            head = head[:min(values)] + MARKER.format(kind="a value cut short")
        text = text[:end] + head
    start = CUT_SHORT_START.match(text) if cut_before else None
    if start and (not start["piece"] or mixed(start["piece"])):  # its tail starts inside one: the rest of it
        text = MARKER.format(kind="the end of a token cut short") + text[start.end():]
    return text


def shape_withheld(kind: str, match: re.Match, found: list[tuple[str, str]], fill: str | None) -> str:
    """What a shape's match becomes: its marker, or, for a shape with a group "value", the match with that
    group's marker in its place (`&sig=[secret withheld: …]`)."""
    if "value" in match.re.groupindex:
        return text_around(match, marker(kind, match["value"], found, fill))
    return marker(kind, match[0], found, fill)


def withhold_aws_secrets(text: str, found: list[tuple[str, str]], fill: str | None) -> str:
    """The text with each AWS secret key near an access key id withheld: 40 characters of base64, in both
    cases, on the id's line or the line before or after it (a CSV of keys, `boto3.client('s3', 'AKIA…', '…')`).
    Alone, 40 such characters are a hash, an id or a nonce; beside an id they are its secret."""
    spans: list[tuple[int, int]] = []
    for key_id in AWS_ACCESS_KEY.finditer(text):
        if is_example(key_id[0]):
            continue
        start, end = lines_around(text, key_id.start(), key_id.end())
        for secret in AWS_SECRET.finditer(text, max(start, spans[-1][1] if spans else 0), end):
            if AWS_SECRET.match(text, secret.start()) and not is_example(secret[0]):  # whole, past `end` too
                spans.append(secret.span())
    pieces, done = [], 0
    for start, end in spans:
        pieces += [text[done:start], marker("AWS secret key", text[start:end], found, fill)]
        done = end
    return "".join(pieces) + text[done:]


def lines_around(text: str, start: int, end: int, reach: int = 300) -> tuple[int, int]:
    """Where the line before the one holding text[start:end] starts, and where the line after it ends, at most
    `reach` characters away."""
    low, high = max(0, start - reach), min(len(text), end + reach)
    before = text.rfind("\n", low, start)
    before = text.rfind("\n", low, before) if before > low else -1
    after = text.find("\n", end, high)
    after = text.find("\n", after + 1, high) if after != -1 else -1
    return (before + 1 if before != -1 else low), (after if after != -1 else high)


def mixed(piece: str) -> bool:
    """Whether a piece of a word looks random, as a token's end does: letters and digits, or 8 characters or
    more of both cases (a token's last 6 may have no digit; "eError" is a word's); and, over 1,000 characters,
    16 different ones or more (a JWT's payload and signature have 60; `aaa…aEND`, one long word printed, has 4)."""
    letters, digits = any(c.isalpha() for c in piece), any(c.isdigit() for c in piece)
    return (((letters and digits) or (len(piece) >= 8 and piece.lower() != piece and piece.upper() != piece))
            and (len(piece) <= 1000 or len(set(piece)) >= 16))


def withheld_values(text: str) -> list[tuple[str, str]]:
    """What `withhold` takes out of a text: (kind, value) for each value, in order."""
    found: list[tuple[str, str]] = []
    withhold(text, found=found)
    return found


def masked(text: str, fill: str, found: list[tuple[str, str]]) -> str:
    """The text with each character `withhold` takes out replaced by `fill` (a character the text does not hold),
    line breaks kept, and the values added to `found`: as long as the text, line for line, so an edit's old_str
    can be matched in it and never inside a value (whether it matched there would tell the value a piece at a
    time)."""
    return withhold(text, found=found, fill=fill)


def unmasked(text: str, original: str, mask: str, fill: str) -> str:
    """`text`, made from `mask` by an edit that left its `fill` characters as they were, with the characters they
    stand for (`original`'s) put back, in order."""
    runs = re.compile(re.escape(fill) + "+")
    hidden = "".join(original[run.start():run.end()] for run in runs.finditer(mask))
    pieces, taken, done = [], 0, 0
    for run in runs.finditer(text):  # a run may be two values side by side, or half of one a line break splits
        pieces += [text[done:run.start()], hidden[taken:taken + len(run[0])]]
        taken, done = taken + len(run[0]), run.end()
    return "".join(pieces) + text[done:]


def continues_word(kind: str, match: re.Match) -> bool:
    """Whether a match of a short or common prefix (`WORD_CHECKED`) starts inside a longer word (`ask-…`), so it
    is not a token of that shape; a letter that ends an escape (`\\n`, `\\u0022`, `%3D`) is no word's."""
    start = match.start()
    return (kind in WORD_CHECKED and start > 0 and match.string[start - 1] in ALPHANUMERIC
            and not ESCAPE_BEFORE.search(match.string, max(0, start - 6), start))


def withhold_named(text: str, found: list[tuple[str, str]], fill: str | None) -> str:
    """The text with each random-looking value of a name that says "secret" withheld."""
    pieces, done, lowered = [], 0, text.lower()
    if len(lowered) != len(text):  # "İ" lowers to two characters: positions would no longer be the text's
        lowered = text.translate(ASCII_LOWER)
    for candidate in CANDIDATE.finditer(lowered):
        start = candidate.start()
        while start > max(done, candidate.start() - NAME_MAX_CHARS) and text[start - 1] in NAME_CHARACTERS:
            start -= 1
        if start < done:
            continue
        if not (match := named_value(text, start, fill)):
            continue
        pieces += [text[done:match.start("value")], marker("a value named as a secret", match["value"], found, fill)]
        done = match.end("value")
    return "".join(pieces) + text[done:]


def text_around(match: re.Match, value: str) -> str:
    """What a match found, with `value` in place of its group "value"."""
    start = match.start()
    return match[0][:match.start("value") - start] + value + match[0][match.end("value") - start:]


def named_value(text: str, start: int, fill: str | None) -> re.Match | None:
    """The match of a name that says "secret" at `start` and its random-looking value, if there is one: to the end
    of its line if the name starts one and the value is not quoted (`DB_PASS=Xy7;Qp2(…`), else to a delimiter."""
    match = NAMED.match(text, start)
    if not (match and (match["quote"] or text.startswith(("\n", "\r\n"), match.end()) or match.end() == len(text))):
        line = owns_line(text, start) and LINE_NAMED.match(text, start)
        if (line and is_secret_name(text, start, line["name"])
                and looks_random(line["value"], fill) and not CALL.fullmatch(line["value"])):
            return line
    if match and is_secret_name(text, start, match["name"]) and looks_random(match["value"], fill):
        return None if is_public_key_id(match["name"], match["value"]) else match
    return None


def owns_line(text: str, start: int) -> bool:
    """Whether a name at `start` starts its line (after an indent, `export `, or YAML's `- `): an `.env`'s, a
    YAML file's, whose value is the rest of the line (`DB_PASS=Xy7;Qp2(…`)."""
    line_start = text.rfind("\n", max(0, start - 40), start) + 1
    return (line_start > 0 or start <= 40) and LINE_START.fullmatch(text, line_start, start) is not None


def is_secret_name(text: str, start: int, name: str) -> bool:
    """Whether a name says its value is secret; `key` alone does in a URL's query (`?key=…`, `&key=…`); what
    only ends as such a name does not (`NextToken`, `AWS::IAM::AccessKey`: `is_no_secret_name`)."""
    if is_no_secret_name(text, start, name):
        return False
    name = name.lower()
    return bool(SECRET_NAME.search(name)) or (name == "key" and start > 0 and text[start - 1] in "?&")


def marker(kind: str, value: str, found: list[tuple[str, str]], fill: str | None = None) -> str:
    """The marker for a value (added to `found`), one for each line it spans: line numbers after a withheld
    private key are the file's own, so read_file's offsets and edit_file's line counts stay right. With a
    `fill`, the value with each character but line breaks replaced by it."""
    found.append((kind, value))
    if fill is not None:
        return re.sub(r"[^\n]", fill, value)
    return "\n".join([MARKER.format(kind=kind)] * (value.count("\n") + 1))


def marker_in(text: str) -> str | None:
    """The first marker in `text` (an edit's old_str or new_str), or None."""
    found = MARKERS.search(text)
    return found[0] if found else None
