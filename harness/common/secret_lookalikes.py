"""What has a credential's shape and is none: documented examples, placeholders, test fixtures, password hashes.

The failure it prevents is the shape net (secret_shapes.py) in the way of ordinary work: a README's
`AKIAIOSFODNN7EXAMPLE`, a `.env.example`'s `ghp_xxxx…`, a test's `password='testpassword123456'`, Django's
`SECRET_KEY = 'django-insecure-…'` or a fixture's `pbkdf2_sha256$…` hash shown to the model as "[secret
withheld: …]", so it cannot read, check or change the line, and people learn to turn the net off. Each rule
here is one a real credential meets only by a chance too small to matter (the numbers are in the comments);
none of them knows a value from its name, and none ever lets through a value that has the randomness of one.
"""

from __future__ import annotations

import re

# Values published as examples in a provider's own documentation: whoever reads them knows them. AWS's carry
# the word EXAMPLE (found by EXAMPLE_WORDS); Stripe's test key and jwt.io's sample token do not.
DOCUMENTED = {
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe's API reference
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2",  # Stripe's older guides
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",  # jwt.io's sample, as its page showed it for years
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiYWRtaW4iOnRydWUsImlhdCI6"
    "MTUxNjIzOTAyMn0.KMUFsIDTnFmyG3nMiGM6H9FNFUROf3wh7SmqJp-QV30",  # and as it shows it now
}
# Words that say a value stands for one, anywhere in it (`…CYEXAMPLEKEY`, `django-insecure-…`): five letters
# or more, so a random token of 40 characters holds one by chance about once in 20 million.
# Searched in the lowered value: a case-insensitive regex took 3.5 µs a value, 7 times as long, and the net asks
# it of every value it finds.
# A value that spells "password" is a person's, for people to read (`webdavgeneratedpassword1`).
EXAMPLE_WORDS = re.compile(r"example|sample|dummy|placeholder|change[_-]?me|redacted|insecure|passw(?:or)?d")
# Words a person writes in a fixture's value (`test-token-…`, `fake-api-key-…`, `your-client-secret`): where a
# word starts, after a character that is no letter, or at the value's start; the words a name says ("secret",
# "password", "token") only there (Braintree's `access_token$production$…` is a live one). Only for values with
# no fixed prefix (`sk_test_` is a live Stripe key's shape: a prefix's words say nothing); a random value of 20
# letters and digits starts one of these about once in 20,000 (its words start after each digit).
FIXTURE_WORDS = re.compile(r"^(?:secret|pass|token)|(?<![a-z])(?:test|fake|mock|demo|your|replace)")
# The alphabet as people type it (`AB1C2defGHijkLMNo3PqQRstUvwxyz…`, AWS's examples), which no generator makes:
# six letters in a row or six digits, which random letters and digits in both cases hold about once in 30 million
# characters, and hex once in 3 million (five letters in a row: hex's `abcde` once in 200,000). For values known
# by their name only.
TYPED_RUN = re.compile("|".join(run[at:at + n] for run, n in (("abcdefghijklmnopqrstuvwxyz", 6), ("0123456789", 6))
                                for at in range(len(run) - n + 1)))
# What a generator made, which no fixture's word excuses: a run of 12 letters and digits or more, in both cases
# (Mollie's test key `test_dHar4XY7LxsDOtmn…` is a live one); a person's fixture is words and plain digits or hex.
RUN = re.compile(r"[A-Za-z0-9]{12,}")
# Names that end as a secret's and name none: a token that pages, locks or makes a request once (AWS's
# `NextToken`, `ChangeToken`, `LockToken`), whose values are UUIDs and base64 JSON.
# And a form's CSRF token (Django's `csrfmiddlewaretoken`), which the server gives every browser that asks.
NO_CREDENTIAL_NAME = re.compile(r"(?:next\w*|page|continuation|pagination|change|lock|request|idempotency|sync|resume"
                                r"|client|purchase|update|[cx]srf\w*)[_-]?token$")
# A name in code, not a value: an attribute of a module or an object (`settings.DJANGO_SECRET_KEY_2024`,
# `django.contrib.auth.backends.ModelBackend2`), its first part lowercase letters, as a password's rarely is; a
# snake_case name (`auth=s3_disable_express_session_auth,` on its own line); or an AWS resource's name (`arn:…`).
CODE_NAME = re.compile(r"[a-z_]+(?:\.[A-Za-z_]\w*)+|[a-z]+\d*(?:_[a-z]+\d*)+,?|arn:[\w-]+:.*")
# A port and a path, not a password (`https://host:8080/path@x`): digits and a "/" after a host (a dot in it,
# `localhost`) or in a web address; a database's (`postgres://app:2024/abc@db`) is a password.
PORT_AND_PATH = re.compile(r"\d{1,5}/")
WEB_SCHEME = re.compile(r"(?i:https?|wss?|ftp)\Z")
PROSE = re.compile(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}")  # three words: no key's body, which has no spaces in it
ARMOUR = re.compile(r"-----[^\n]{0,80}?-----")  # a PEM block's BEGIN and END lines
# A password hash is no password (Django's, Werkzeug's, LDAP's and Spring's forms; crypt's `$2b$…`, `$argon2…`,
# `$6$…` start with a `$`, which a value named as a secret never does: secret_shapes.looks_random).
# A marker the net put in a value's place: read again, it is no value.
MARKERS = re.compile(r"\[secret withheld: [^\]\n]{1,60}\]")
# A value SOPS encrypted (`password: ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`): random, and no secret in clear.
SOPS_ENCRYPTED = re.compile(r"ENC\[AES256_GCM,data:")
# A GPG key's id or fingerprint, which git's `signingkey` names: public, as a key's name is (an SSH key's path,
# the other form, is a path already).
KEY_ID = re.compile(r"(?:0x)?(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{16}|[0-9A-Fa-f]{40})!?")
PASSWORD_HASH = re.compile(r"(?:pbkdf2_sha\d+|argon2|bcrypt(?:_sha256)?|scrypt|sha1|md5)\$|(?:pbkdf2|scrypt):[\w:]*\$"
                           r"|\{(?i:s?sha\d*|s?md5|crypt|bcrypt|pbkdf2|scrypt|argon2)\}")


def is_example(value: str) -> bool:
    """Whether a value with a credential's shape is a documented example (`AKIAIOSFODNN7EXAMPLE`, Stripe's test
    key, jwt.io's token) or a placeholder: a word that says so, or mostly one character (`ghp_xxxx…`,
    `AKIAXXXX…`, `sk_live_0000…`; a random token's commonest character is a few percent of it)."""
    return (value in DOCUMENTED or EXAMPLE_WORDS.search(value.lower()) is not None
            or mostly_one_character(value))


def mostly_one_character(value: str) -> bool:
    """Whether the character at a value's middle is more than half of it: a run of one character longer than
    half a value always covers its middle, so every `xxxx…` placeholder is found by one count (counting every
    character took 0.3 s a megabyte of credentials)."""
    return bool(value) and value.count(value[len(value) // 2]) * 2 > len(value)


def is_fixture(value: str) -> bool:
    """Whether a value a name says is secret, or a password in a URL or on a command line, is a test's or a
    document's: an example (`is_example`), the alphabet typed (`abcdef`, `123456`), a fixture's word
    (`testpassword123456`, `your-token`) in a value no generator made, or a password hash (`pbkdf2_sha256$…`)."""
    lowered = value.lower()
    if is_example(value) or PASSWORD_HASH.match(value) or TYPED_RUN.search(lowered):
        return True
    return FIXTURE_WORDS.search(lowered) is not None and not any(
        run.lower() != run and run.upper() != run for run in RUN.findall(value))  # both cases: generated


def is_no_url_password(match: re.Match) -> bool:
    """Whether what secret_shapes.URL_PASSWORD found is no password: a host's port and a path (`PORT_AND_PATH`),
    or a default that repeats the user's name (`postgres://postgres:postgres@`, `amqp://guest:guest@`)."""
    scheme_end = match.start()
    return match["value"] == match["user"] or bool(PORT_AND_PATH.match(match["value"])) and (
        "." in match["user"] or match["user"] == "localhost" or WEB_SCHEME.search(match.string, max(0, scheme_end - 5),
                                                                                  scheme_end) is not None)


def is_no_key(value: str) -> bool:
    """Whether a private key's shape holds none: a block whose body is prose (the AWS CLI's examples: `-----BEGIN
    RSA PRIVATE KEY-----\\nkey omitted for security reasons\\n-----END…`), or a base64 text that starts as a PEM
    block's would and holds a certificate (kubeconfig's client-certificate-data)."""
    if value.startswith("-----"):  # its BEGIN and END lines say "begin private key" themselves
        return PROSE.search(ARMOUR.sub("", value)) is not None
    if not value.startswith("LS0tLS1CRUdJTi"):
        return False
    import base64
    import binascii
    try:
        return b"PRIVATE KEY" not in base64.b64decode(value[:80])
    except (binascii.Error, ValueError):
        return True


def is_no_secret_name(text: str, start: int, name: str) -> bool:
    """Whether a name at text[start:] that ends as a secret's names none: a token that pages or locks
    (`NO_CREDENTIAL_NAME`), a type's last part (`"AWS::IAM::AccessKey": "72c2d9dd…"`, CloudFormation's), or a
    part of a path of colons (an ARN's `:secret:MyTestSecret-a1b2c3`)."""
    end = start + len(name)
    return (text[max(0, start - 2):start] == "::" or text[start - 1:start] == ":" and text[end:end + 1] == ":"
            or name[-5:].lower() == "token" and NO_CREDENTIAL_NAME.search(name.lower()) is not None)


def is_code(value: str) -> bool:
    """Whether a value named as a secret is a name in code or a resource's name (`CODE_NAME`), not a secret."""
    return CODE_NAME.fullmatch(value) is not None


def is_placeholder(value: str, fill: str | None) -> bool:
    """Whether a value flagged or in a URL stands for one (`$DB_PASSWORD`, `${PASS}`, `{{ pass }}`, `<pass>`,
    `****`, `…`, `PASSWORD`, a build's token filter `@package@`), is a test's or a document's (`example`,
    `testpassword`: `is_fixture`), is a marker (`-p[secret withheld: …]`, read again), or (`masked`) holds a
    value withheld already (`fill`)."""
    return (value.startswith(("$", "{", "<", "%", "-", "[")) or "${" in value or set(value) <= set("*x.…")
            or (value.isupper() and value.replace("_", "").isalpha()) or bool(MARKERS.search(value))
            or value.startswith("@") and value.endswith("@")  # Ant's and Maven's filters fill these in at build
            or (fill is not None and fill in value) or is_fixture(value))


def is_encrypted(value: str) -> bool:
    """Whether a value named as a secret is one SOPS encrypted (`ENC[AES256_GCM,data:…]`), not one in clear."""
    return SOPS_ENCRYPTED.match(value) is not None


def is_public_key_id(name: str, value: str) -> bool:
    """Whether a value is git's `signingkey`, a GPG key's id or fingerprint (`signingkey = 3AA5C34371567BD2`)."""
    return name.lower() == "signingkey" and KEY_ID.fullmatch(value) is not None
