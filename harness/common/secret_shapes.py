"""Credentials known by their shape: the second net under the name table, for secrets in files it does not name.

The failure it prevents is a token sent to the model from a file nobody thought of: a shell history, an editor's
settings, a tool's login cache, a project's `nuget.config`. The name table (secret_files.py) will always trail
the tools people use; a token's shape does not: a GitHub token starts `ghp_`, an AWS key `AKIA`, a private key
`-----BEGIN … PRIVATE KEY-----`. `withhold` replaces each such value in a tool's result with a marker that says
what was there, never what it was ("[secret withheld: GitHub token]"); `Workspace.redact` applies it to every
result, after the API key, and before anything is cut or searched, so a search cannot find a token a character
at a time and a cut cannot leave half of one.

The shapes are those gitleaks and detect-secrets match with few false alarms: fixed prefixes with a length
(`SHAPES`), and values given to a name that says "secret" (`password = …`, `"client_secret": "…"`,
`npmAuthToken: …`), taken only when they look random (16 characters or more, letters and digits), so that
`password = os.environ["DB_PASSWORD"]` or `token = get_token()` stays code the model can read and change.

The marker can never match the file's own text unknowingly: `marker_in` finds it in an edit's old or new text,
and files.py refuses such an edit with the reason, unless the file really holds those words; and an edit's
old_str must match the file as it was shown, so no run of tries can find a value a piece at a time.

What a shape cannot do: know a value no shape describes (`password = hunter2`, short and plain), or stop a command
that prints a value in another form (`base64 settings.json`): the net keeps credentials out of what the tools
show, not out of reach of a command the user let run. The name table, the kernel boundary (landlock.py) and the
question before each command do that.
"""

from __future__ import annotations

import re

MARKER = "[secret withheld: {kind}]"  # what a value is replaced with; the kind says what it looked like
MARKERS = re.compile(r"\[secret withheld: [^\]\n]{1,60}\]")  # any marker, as an edit's text may carry one back

# (what it is, its shape). Each starts with a literal, which the regex engine finds fast (a leading \b would make
# it try every position: 30 times slower); `withhold` checks instead that the match does not continue a word, so
# `xghp_…` in a longer name or a base64 blob is not taken for a token. A shape with a lookbehind of its own
# (`(?<=`) says itself what comes before it.
SHAPES = [
    # to its end (base64, and the headers of an encrypted one: `DEK-Info: AES-128-CBC,…`), or to where it stops
    ("private key", r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?:[\w+/=\s\\,:.]|-(?!----))*+"
                    r"-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*+)"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("GitHub token", r"github_pat_\w{60,}"),
    ("GitLab token", r"gl(?:pat|ptt|dt|rt|cbt|ft|oas)-[\w-]{20,}"),
    ("Anthropic key", r"sk-ant-[\w-]{32,}"),
    ("API key", r"sk-(?:proj-|svcacct-|admin-|or-v1-)?(?=[A-Za-z_-]{0,80}+\d)[A-Za-z0-9_-]{20,}"),  # OpenAI, DeepSeek
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
    ("Google API key", r"AIza[\w-]{35}"),
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
    ("Vault token", r"hv[sb]\.[\w-]{90,}"),
    ("Postman key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("Linear key", r"lin_api_[A-Za-z0-9]{40}"),
    ("Notion token", r"secret_[A-Za-z0-9]{43}"),
    ("Notion token", r"ntn_[A-Za-z0-9]{40,}"),
    ("Telegram bot token", r":AA(?<=\d:AA)[\w-]{33,}"),  # after the bot's number, which stays
    ("Azure client secret", r"Q~(?<=[\w~.]{3}\dQ~)[\w~.-]{31,34}"),  # its first four characters stay
    ("Doppler token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
]
COMPILED = [(kind, re.compile(shape)) for kind, shape in SHAPES]
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
SECRET_NAME = re.compile(r"(?:password|passwd|secret|token|(?:api|access|private|secret|account|client|auth"
                         r"|signing|encryption|master)[_-]?key|apikey|auth|authident|credentials?|authorization)$")
NAMED = re.compile(r"""(?ix) (?P<name>[\w.-]{1,100}) \\?["']? [ \t]* (?: [:=] | ["']?[ \t]+value[ \t]*= ) [ \t]*
                   \\?(?P<quote>["'])? (?:(?:bearer|basic|token|bot)[ \t]+)?
                   (?P<value> (?(quote) [^"'\s\\]{16,2000}+ | [^"'\s,;<>(){}\[\]=:\\]{16,2000}+=* ) )
                   (?= [\\"'\s,;<>]|$)""")
# A password in a URL: postgres://user:pw@host, https://user:token@pypi.example/simple (pip.conf, .git/config).
URL_PASSWORD = re.compile(r"://(?P<user>[^\s:/@'\"]{1,100}):(?P<value>[^\s@/'\"$<>{}*]{3,200})(?=@)")
CUT_SHORT_END = re.compile(r"(?:-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE[\s\S]*|(?<![\w-])(?:gh[pousr]_|github_pat_|sk-"
                           r"|AKIA|ASIA|xox|hf_|npm_|pypi-|AIza|glpat-|eyJ)[\w.-]{0,2000}+)\Z")
CUT_SHORT_START = re.compile(r"[A-Za-z0-9+/=\s]*-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----"
                             r"|(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{20,}(?![\w-])")
TOKEN_CHARACTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
NAME_CHARACTERS = TOKEN_CHARACTERS | {"."}
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def looks_random(value: str) -> bool:
    """Whether a value named like a secret is one: long, with letters and digits; not a ${placeholder}, a path
    (`SECRET_FILE=/run/secrets/db`) or a URL; not one letter repeated ("xxxxxxxxxxxxxxxx1")."""
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and "${" not in value
            and not value.startswith(("/", "~", "./", "../", "$")) and "://" not in value
            and len(set(value)) >= 8 and not MARKERS.search(value))


def withhold(text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
    """The text with every value shaped like a credential replaced by a marker saying what it was. Where a text
    was cut (a command's output kept as a head and a tail), a token cut short there is withheld too.

    >>> withhold('token = "ghp_' + 'a1' * 18 + '"')
    'token = "[secret withheld: GitHub token]"'
    """
    for kind, shape in COMPILED:
        text = shape.sub(lambda match, kind=kind: match[0] if continues_word(match) else marker(kind, match[0]), text)
    text = withhold_named(text)
    if "://" in text:
        text = URL_PASSWORD.sub(lambda match: f"://{match['user']}:{MARKER.format(kind='password in a URL')}", text)
    if cut_after:  # the head of a cut output ends inside a token: what shows of it is cut short of its shape
        end = max(0, len(text) - 8000)  # a private key cut short is the longest: RSA 4096's is 3,300 characters
        text = text[:end] + CUT_SHORT_END.sub(MARKER.format(kind="a token cut short"), text[end:])
    if cut_before and (start := CUT_SHORT_START.match(text)):  # its tail starts inside one: the rest of it
        text = MARKER.format(kind="the end of a token cut short") + text[start.end():]
    return text


def continues_word(match: re.Match) -> bool:
    """Whether a match starts inside a longer word (`xghp_…`), so it is not a token of that shape; a shape with
    a lookbehind of its own has said already what may come before it."""
    return ("(?<=" not in match.re.pattern and match.start() > 0
            and match.string[match.start() - 1] in TOKEN_CHARACTERS)


def withhold_named(text: str) -> str:
    """The text with each random-looking value of a name that says "secret" withheld."""
    pieces, done, lowered = [], 0, text.lower()
    if len(lowered) != len(text):  # "İ" lowers to two characters: positions would no longer be the text's
        lowered = text.translate(ASCII_LOWER)
    for candidate in CANDIDATE.finditer(lowered):
        start = candidate.start()
        while start > max(done, candidate.start() - NAME_MAX_CHARS) and text[start - 1] in NAME_CHARACTERS:
            start -= 1
        match = NAMED.match(text, start)
        if (not match or not SECRET_NAME.search(match["name"].lower()) or not looks_random(match["value"])
                or start < done):
            continue
        pieces += [text[done:match.start("value")], MARKER.format(kind="a value named as a secret")]
        done = match.end("value")
    return "".join(pieces) + text[done:]


def marker(kind: str, value: str) -> str:
    """The marker for a value, one for each line it spans: line numbers after a withheld private key are the
    file's own, so read_file's offsets and edit_file's line counts stay right."""
    return "\n".join([MARKER.format(kind=kind)] * (value.count("\n") + 1))


def marker_in(text: str) -> str | None:
    """The first marker in `text` (an edit's old_str or new_str), or None."""
    found = MARKERS.search(text)
    return found[0] if found else None
