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
EXAMPLE_WORDS = re.compile(r"example|sample|dummy|placeholder|change[_-]?me|redacted|insecure")
# Words a person writes in a fixture's value (`test-token-…`, `fake-api-key-…`, `your-client-secret`): where a
# word starts, after a character that is no letter, or at the value's start; the words a name says ("secret",
# "password", "token") only there (Braintree's `access_token$production$…` is a live one). Only for values with
# no fixed prefix (`sk_test_` is a live Stripe key's shape: a prefix's words say nothing); a random value of 20
# letters and digits starts one of these about once in 20,000 (its words start after each digit).
FIXTURE_WORDS = re.compile(r"^(?:secret|passw(?:or)?d|token)|(?<![a-z])(?:test|fake|mock|demo|your|replace)")
# What a generator made, which no fixture's word excuses: a run of 12 letters and digits or more, in both cases
# (Mollie's test key `test_dHar4XY7LxsDOtmn…` is a live one); a person's fixture is words and plain digits or hex.
RUN = re.compile(r"[A-Za-z0-9]{12,}")
# A port and a path, not a password (`https://host:8080/path@x`): digits and a "/" after a host (a dot in it,
# `localhost`) or in a web address; a database's (`postgres://app:2024/abc@db`) is a password.
PORT_AND_PATH = re.compile(r"\d{1,5}/")
WEB_SCHEME = re.compile(r"(?i:https?|wss?|ftp)\Z")
# A password hash is no password (Django's, Werkzeug's, LDAP's and Spring's forms; crypt's `$2b$…`, `$argon2…`,
# `$6$…` start with a `$`, which a value named as a secret never does: secret_shapes.looks_random).
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
    document's: an example (`is_example`), a fixture's word (`testpassword123456`, `your-token`) in a value no
    generator made, or a password hash (`pbkdf2_sha256$…`)."""
    if is_example(value) or PASSWORD_HASH.match(value):
        return True
    return FIXTURE_WORDS.search(value.lower()) is not None and not any(
        run.lower() != run and run.upper() != run for run in RUN.findall(value))  # both cases: generated


def is_no_url_password(match: re.Match) -> bool:
    """Whether what secret_shapes.URL_PASSWORD found is no password: a host's port and a path (`PORT_AND_PATH`),
    or a default that repeats the user's name (`postgres://postgres:postgres@`, `amqp://guest:guest@`)."""
    scheme_end = match.start()
    return match["value"] == match["user"] or bool(PORT_AND_PATH.match(match["value"])) and (
        "." in match["user"] or match["user"] == "localhost" or WEB_SCHEME.search(match.string, max(0, scheme_end - 5),
                                                                                  scheme_end) is not None)


def is_no_key(value: str) -> bool:
    """Whether a base64 text that starts as a PEM block's would does not hold a private key (a certificate's:
    kubeconfig's client-certificate-data)."""
    if not value.startswith("LS0tLS1CRUdJTi"):
        return False
    import base64
    import binascii
    try:
        return b"PRIVATE KEY" not in base64.b64decode(value[:80])
    except (binascii.Error, ValueError):
        return True
