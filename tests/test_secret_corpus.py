"""The shape net on a corpus (issue 33 item 4): ordinary lines people paste pass through byte for byte, and
credentials at their real length and alphabet are withheld.

Precision first: every line withheld that is no credential is in the way of ordinary work, and teaches people
to turn the net off. Keep ORDINARY growing from what users paste (a line the net withheld wrongly goes here
first). The credentials are made with `secrets` at every run, in the alphabets and lengths the real ones have,
so no test passes because of a made-up pattern (`aB3dE6…` repeated) a real token never has."""

import base64
import hashlib
import json
import secrets
import string
import uuid
from urllib.parse import quote

import pytest

from harness.common.secret_shapes import withhold
from harness.files.workspace import Workspace
from tools import run_tool

ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"
URL_SAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
RUNS = 30  # draws of each random family a run; each draw is a new value


def draw(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def pem_lines(der: bytes, width: int = 64) -> list[str]:
    body = b64(der)
    return [body[at:at + width] for at in range(0, len(body), width)]


def marker(kind: str) -> str:
    return f"[secret withheld: {kind}]"


# --- ordinary lines: each must come back byte for byte ---

JWT_IO = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5"
          "MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
ORDINARY = [
    # documented examples and test keys
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE",
    "export AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "curl https://api.stripe.com/v1/charges -u sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
    "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
    f"Authorization: Bearer {JWT_IO}",
    f'const token = "{JWT_IO}";',
    # placeholders
    "GITHUB_TOKEN='ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'",
    "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
    "OPENAI_API_KEY=sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx1",
    "token: <your-token>", "password: changeme", "OPENAI_API_KEY=<your-api-key>", "api_key: ${API_KEY}",
    'SECRET_KEY = "change-me-to-a-long-random-string-2024"', "PASSWORD=********", "export OPENAI_API_KEY=sk-...",
    'api_key = "aaaaaaaaaaaaaaaaaaaaaaaa"', "STRIPE_SECRET_KEY=sk_live_0000000000000000000000000000",
    'client_secret: "your-client-secret-goes-here-123"', "MAILGUN_API_KEY=key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Authorization: Bearer <token>", 'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    # password hashes
    "password = 'pbkdf2_sha256$600000$GxmHsGnvTcsRq3Zlz4hbxB$7iTeaTQd0VKp6kXyuaFXEtV0+0k63mYg5eL2eF1Vd+c='",
    '"password": "pbkdf2_sha256$870000$Qq2Xk9Lm3Rt5Vw7Yz1Bc4D$aHR0cHM6Ly9leGFtcGxlLmNvbS9wYXNzd29yZGhhc2g=",',
    "admin:$2b$12$KIXQJ9bJ0rKxYz3m5d5iUeQY0mUZ3Zf2pG5m8kA9wH1v6N8bC7dEe",
    'hashed_password = "$2b$12$KIXQJ9bJ0rKxYz3m5d5iUeQY0mUZ3Zf2pG5m8kA9wH1v6N8bC7dEe"',
    "password_hash = '$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG'",
    '"password": "argon2$argon2id$v=19$m=102400,t=2,p=8$c29tZXNhbHQxMjM$Yk5vbmNlRGVmaW5pdGVseU5vdEE"',
    "password = 'pbkdf2:sha256:600000$Kp3Zr8Lm$9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'",
    "password = 'scrypt:32768:8:1$Kp3Zr8LmQw2Tn3Lw$1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9'",
    # framework placeholders and test fixtures
    "SECRET_KEY = 'django-insecure-k9#x2@v!q7m$w3z8&p5r^t1y6u0e4i-o)a(s*d+f=g'",
    "token = 'test-token-0123456789abcdef'", "password='testpassword123456'",
    'api_key = "fake-api-key-1234567890abcdef"', 'SECRET_KEY = "dummy-secret-for-tests-only-123"',
    'client_secret: "mock_client_secret_abc123def456"', "TEST_TOKEN = 'test_5f2b9c1e8a7d4e6fb5c4d3e2f1a0b9c8'",
    'self.client.login(username="alice", password="secret-password-42-for-tests")',
    "PASSWORD = 'demo-password-2024-abcdef'", 'auth_token = "token-for-the-fixture-9f8e7d"',
    # passwords in URLs that say what they are
    "DATABASE_URL=postgres://shop:example@db:5432/shop", "postgres://postgres:postgres@localhost:5432/app",
    "postgresql://user:password@localhost/dbname", "amqp://guest:guest@rabbitmq:5672/", "mysql://root:root@127.0.0.1/app",
    "redis://:password@localhost:6379/0", "DATABASE_URL=postgres://app:changeme@db/app",
    "https://user:your-token@git.example.com/org/repo.git",
    # what a project holds that is no credential
    'id = "f47ac10b-58cc-4372-a567-0e02b2c3d479"', "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/app-1.2.3.tar.gz",
    "FROM python:3.12-slim@sha256:2be8daddbb82756f7d1f2c7ece706aadcb284bf6ab6d769ea695cc3ed6016743",
    "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
    'checksum = "9fc1a3fbc7a6fd35d8b4a4ac04c3b1a45e8f27e2e6d6a1ce4d2e2bd2ab8df7a4"',
    '  integrity sha512-Jk1oVb3lR9+8l9rDuBqAYfjG0u3RnX9xQ2cY4mZ7pW1vT5sN0aE6dH8fK2gL3jI4oP5qR6sT7uV8wX9yZ0aB1cD==',
    ".btn-primary{color:#fff;background-color:#0d6efd;border-color:#0d6efd}.btn-primary:hover{color:#fff}",
    '!function(e,t){"object"==typeof exports&&"undefined"!=typeof module?module.exports=t():e.dayjs=t()}(this,'
    'function(){"use strict";var t=1e3,e=6e4,n=36e5,r="millisecond",i="second";return{token:n,key:r}});',
    '"mappings": "AAAA,SAAS,KAAK,CAAC,GAAG,EAAE;AAClB,OAAO,CAAC,GAAG,CAAC,GAAG,CAAC,CAAC;AACxB,CAAC"',
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop",
    "<input type=\"password\" name=\"password\" placeholder=\"Password\" autocomplete=\"current-password\">",
    "max_tokens = 4096  # the reply's limit", "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "password = os.environ['DB_PASSWORD']", "DB_PASSWORD=${DB_PASSWORD:?set it in .env}",
    "key-value store: keys are strings, values are bytes", "Cache-Control: max-age=31536000, immutable",
    "request_id=8f14e45fceea167a5a36dedd4bea2543 status=200 elapsed=0.013s",
    "https://example.com/search?q=sig%3D&sig=short", "EAAA is the start of a base64 run of zero bytes",
    "MIIT License, see LICENSE", "See docs/sas.md: a SAS token ends with &sig=<signature>.",
    # configuration people paste from CI, Kubernetes, Helm and .env.example files
    "          token: ${{ secrets.GITHUB_TOKEN }}", "  password: {{ .Values.postgresql.auth.password | quote }}",
    "data:\n  password: cGFzc3dvcmQ=\n  username: YWRtaW4=", 'variable "db_password" {\n  sensitive = true\n}',
    "OPENAI_API_KEY=sk-your-key-here", "SECRET_KEY=replace-with-a-long-random-string-1234",
    "AWS_SECRET_ACCESS_KEY=your-secret-access-key-here-0123456789", "JWT_SECRET=test-jwt-secret-for-ci-only-42",
    "export GITHUB_TOKEN=ghp_0000000000000000000000000000000000000000", "API_TOKEN=dummy-token-value-123456789",
    'headers = {"Authorization": f"Bearer {token}"}',
    # found by running the net over a Python installation's packages (botocore's and the AWS CLI's examples)
    '"AWS::IAM::AccessKey": "72c2d9dd90025459",', '"AWS::SecretsManager::Secret": "c85175a4ebcce361",',
    '"ChangeToken": "abcd12f2-46da-4fdb-b8d5-fbd4c466928f",', '"LockToken":"c8abf33f-b6fc-46ae-846e-42f994d57b29"',
    '"NextToken": "eyJNYXJrZXIiOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAzfQ=="',
    '"ARN": "arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret-a1b2c3",',
    '"Password": "webdavgeneratedpassword1",', '"LocalConsolePassword": "PassWordMustBeAtLeast6Chars."',
    "DATABASE_URL = 'postgres://user:pass@localhost:5432/foobar'",
    'cmd_args = ["--username", username, "--password", password]',
    '"encryptionKey": "arn:aws:kms:us-west-2:123456789012:alias/aws/s3",', '"token": "a1b2c3d4567890ab",',
    '"ClientToken": "5236cffc-ee13-4a32-bb5b-388d9da09d96"', '"PurchaseToken": "eyJ2IjoiMSIsInMiOjEsImMiOi...",',
    '"nextForwardToken": "f/31961209122447488583055879464742346735121166569214640130",',
    '"passphrase": "AB1C2defGHijkLMNo3PqQRstUvwxyzaBCDEfghh4ijklMN5opqrStuVWxyzAbCDEfghIJ"',
    '"KeyPem": "-----BEGIN RSA PRIVATE KEY-----\\nkey omitted for security reasons\\n-----END RSA PRIVATE KEY-----"',
    "            auth=s3_disable_express_session_auth,", 'self.update_token = "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"',
    # a user's attack found these withheld (prose after --password, build placeholders, public key ids,
    # values SOPS encrypted, a form's CSRF token)
    "        # the --username and --password options are only for the index's basic authentication",
    "pip download --password option takes the index's password",
    "<token>@package@</token>", "<apiToken>@projectversion@</apiToken>",
    '<filter token="version" value="@projectversion@"/>',
    "[user]\n\tsigningkey = 3AA5C34371567BD2", "\tsigningkey = 4AEE18F83AFDEB23B36E79B1C8F0E3A0D5B7C9E1",
    "  signingKey = 0x3AA5C34371567BD2",
    "password: ENC[AES256_GCM,data:Tr3k9sLq2mWzX8vB,iv:1Yh7Qk3ZpLm9Xw2Rt5Vb8Nc4Jd6Fg0Hs2Aq7We9Ty1U=,"
    "tag:Kp3Zr8Lm9Qw2Tn3Lw5Xy7A==,type:str]",
    '"db_password": "ENC[AES256_GCM,data:9gH2kLq8Zx3mN7pR,iv:Qw9Er4Ty7Ui2Op5As8Df1Gh3Jk6Lz0Xc4Vb7Nm9Qw2E=,'
    'tag:Zx8Cv5Bn2Mq7Wr4Et1Yu6I==,type:str]",',
    '<input type="hidden" name="csrfmiddlewaretoken" value="'
    'Xq7Lm2Zp9Rt4Vw8Yb3Nc6Jd1Fg5Hs0Ak2Qe7Wr9Ty4Ui1Op6As3Df8Gh5Jk0Lz7Xc2Vb">',
    # what the new shapes could take and must not: code after `hvs.`, a word before `pul-`, netrc's words in prose
    "hosts = self.hvs.get_hypervisors_list_all()", "x = hvs.getHypervisorsListAllOfThem()",
    "glc_ComputeTextureCoordinatesForSomethingX", "capul-9fceb02d0ae598e95dc970b74767f19372d61af8",
    "the default password is Winter", "machine learning models need a password",
]
PNG = b"\x89PNG\r\n\x1a\n"
RANDOM_ORDINARY = {  # a family of ordinary values: a new one each draw
    "uuid": lambda: f'"id": "{uuid.uuid4()}",',
    "git SHA": lambda: f"commit {draw(HEX, 40)}\nMerge: {draw(HEX, 7)} {draw(HEX, 7)}",
    "sha256 sum": lambda: f"{hashlib.sha256(secrets.token_bytes(16)).hexdigest()}  build/output.bin",
    "lockfile integrity": lambda: f'"integrity": "sha512-{b64(secrets.token_bytes(64))}",',
    "base64 image": lambda: f'<img src="data:image/png;base64,{b64(PNG + secrets.token_bytes(1200))}">',
    "go.sum": lambda: f"github.com/acme/lib v1.2.3 h1:{b64(secrets.token_bytes(32))}",
    "certificate": lambda: "\n".join(["-----BEGIN CERTIFICATE-----", *pem_lines(
        bytes.fromhex("3082037730820260a003020102") + secrets.token_bytes(880)), "-----END CERTIFICATE-----"]),
    "public key": lambda: "\n".join(["-----BEGIN PUBLIC KEY-----", *pem_lines(
        bytes.fromhex("30820122300d06092a864886f70d01010105000382010f003082010a0282010100")
        + secrets.token_bytes(270)), "-----END PUBLIC KEY-----"]),
    "django key": lambda: "SECRET_KEY = 'django-insecure-" + draw(string.ascii_lowercase + string.digits
                                                                   + "!@#$%^&*(-_=+)", 50) + "'",
    "pbkdf2 hash": lambda: f'"password": "pbkdf2_sha256$870000${draw(ALNUM, 22)}${b64(secrets.token_bytes(32))}"',
    "fixture": lambda: f"token = 'test-token-{draw(HEX, 24)}'",
}


@pytest.mark.parametrize("line", ORDINARY)
def test_an_ordinary_line_passes_unchanged(line):
    assert withhold(line) == line


@pytest.mark.parametrize("family", list(RANDOM_ORDINARY))
def test_ordinary_random_values_pass_unchanged(family):
    for _ in range(RUNS):
        text = RANDOM_ORDINARY[family]()
        assert withhold(text) == text


def test_the_ordinary_corpus_reads_through_read_file_unchanged(tmp_path):
    """As the issue's reader met it: the whole corpus in one file, read with read_file, comes back as it is."""
    text = "\n".join(ORDINARY + [make() for make in RANDOM_ORDINARY.values()]) + "\n"
    (tmp_path / "corpus.txt").write_text(text)
    assert run_tool(Workspace(tmp_path), "read_file", {"path": "corpus.txt"}).output == text.rstrip("\n")


# --- credentials at their real shape: each must be withheld, the rest of its line kept ---


def private_key_der() -> bytes:
    """An RSA key's PKCS#8 DER as it starts (SEQUENCE, version 0, rsaEncryption), with random bytes for the rest."""
    return bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7") + secrets.token_bytes(1191)


def openssh_body() -> list[str]:
    return pem_lines(b"openssh-key-v1\0" + b"\0\0\0\4none" + secrets.token_bytes(380), width=70)


def discord_token() -> tuple[str, str]:
    """A bot's id, 17 to 20 digits in base64, and the rest of its token."""
    digits = secrets.choice([17, 18, 19, 20])
    user_id = str(10 ** (digits - 1) + secrets.randbelow(9 * 10 ** (digits - 1)))
    return b64url(user_id.encode()), f"{draw(URL_SAFE, 6)}.{draw(URL_SAFE, 38)}"


def jwt() -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps({"sub": secrets.token_hex(8), "exp": 1893456000}).encode())
    return f"{head}.{body}.{b64url(secrets.token_bytes(32))}"


def aws_pair() -> tuple[str, str]:
    return "AKIA" + draw(string.ascii_uppercase + "234567", 16), b64(secrets.token_bytes(30))


def password() -> str:
    """A generated password as password managers make them: 20 characters, a digit among them (one with no digit
    is words to the net: `looks_random`)."""
    return "".join(secrets.SystemRandom().sample(draw(ALNUM + "!#%&*-_", 19) + secrets.choice(string.digits), 20))


def generated(n: int) -> str:
    """n letters and digits as a key generator makes them: both cases and a digit among them, as all but one in
    a few million random ones have."""
    return "".join(secrets.SystemRandom().sample(draw(ALNUM, n - 3) + secrets.choice(string.ascii_lowercase)
                                                 + secrets.choice(string.ascii_uppercase)
                                                 + secrets.choice(string.digits), n))


SENTRY_CLAIMS = {"iat": 1700000000.5, "url": "https://sentry.io", "region_url": "https://us.sentry.io", "org": "acme"}


def credentials() -> list[tuple[str, str]]:
    """(text, what the model is shown) for one draw of each credential."""
    aws_id, aws_secret = aws_pair()
    bot_id, discord = discord_token()
    sas = b64(secrets.token_bytes(32))
    key_lines, ssh_lines = pem_lines(private_key_der()), openssh_body()
    pkcs8 = "\n".join(key_lines)
    one_line = "\\n".join(key_lines)
    mark = marker
    return [
        (f"GITHUB_TOKEN=ghp_{draw(ALNUM, 36)}", f"GITHUB_TOKEN={mark('GitHub token')}"),
        (f"token: github_pat_{draw(ALNUM, 22)}_{draw(ALNUM, 59)}", f"token: {mark('GitHub token')}"),
        (f"OPENAI_API_KEY=sk-proj-{draw(URL_SAFE, 156)}", f"OPENAI_API_KEY={mark('API key')}"),
        (f"key = 'sk-ant-api03-{draw(URL_SAFE, 93)}AA'", f"key = '{mark('Anthropic key')}'"),
        (f"Stripe.api_key = 'sk_live_{draw(ALNUM, 99)}'", f"Stripe.api_key = '{mark('Stripe key')}'"),
        (f"STRIPE_SECRET_KEY=sk_test_{draw(ALNUM, 24)}", f"STRIPE_SECRET_KEY={mark('Stripe key')}"),
        (f"aws_access_key_id = {aws_id}", f"aws_access_key_id = {mark('AWS access key')}"),
        (f"SLACK=xoxb-{secrets.randbelow(10 ** 12)}-{secrets.randbelow(10 ** 13)}-{draw(ALNUM, 24)}",
         f"SLACK={mark('Slack token')}"),
        (f"HF_TOKEN=hf_{draw(ALNUM, 34)}", f"HF_TOKEN={mark('Hugging Face token')}"),
        (f"//registry.npmjs.org/:_authToken=npm_{draw(ALNUM, 36)}", f"//registry.npmjs.org/:_authToken={mark('npm token')}"),
        (f'"key": "AIza{draw(URL_SAFE, 35)}"', f'"key": "{mark("Google API key")}"'),
        (f"SENDGRID=SG.{draw(URL_SAFE, 22)}.{draw(URL_SAFE, 43)}", f"SENDGRID={mark('SendGrid key')}"),
        (f"Authorization: Bearer {jwt()}", f"Authorization: Bearer {mark('JSON web token')}"),
        ("-----BEGIN PRIVATE KEY-----\n" + pkcs8 + "\n-----END PRIVATE KEY-----",
         "\n".join([mark("private key")] * (len(key_lines) + 2))),
        # what the net missed before issue 33
        (f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&spr=https"
         f"&sig={quote(sas, safe='')}", "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&"
         f"se=2026-12-31T00:00:00Z&spr=https&sig={mark('Azure SAS signature')}"),
        (f"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sp=rl&sig={sas}&x=1",
         f"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sp=rl&sig="
         f"{mark('Azure SAS signature')}&x=1"),
        (pkcs8 + "\nnext line", "\n".join([mark("private key")] * len(key_lines)) + "\nnext line"),
        (f'"private_key": "{one_line}\\n",', f'"private_key": "{mark("private key")}\\n",'),
        ("\n".join(ssh_lines) + "\n-----END OPENSSH PRIVATE KEY-----",
         "\n".join([mark("private key")] * (len(ssh_lines) + 1))),
        (f"DISCORD_BOT={bot_id}.{discord}", f"DISCORD_BOT={bot_id}{mark('Discord bot token')}"),  # the id stays
        (f"client.run('{bot_id}.{discord}')", f"client.run('{bot_id}{mark('Discord bot token')}')"),
        (f"mailgun = Mailgun('key-{draw(HEX, 32)}')", f"mailgun = Mailgun('{mark('Mailgun key')}')"),
        (f"SQUARE_ACCESS_TOKEN=EAAA{draw(URL_SAFE, 60)}", f"SQUARE_ACCESS_TOKEN={mark('Square token')}"),
        (f"client = Client(access_token='EAAA{draw(URL_SAFE, 60)}')", f"client = Client(access_token='{mark('Square token')}')"),
        (f"square: sq0csp-{draw(URL_SAFE, 43)}", f"square: {mark('Square token')}"),
        (f"alice,,{aws_id},{aws_secret},https://123456789012.signin.aws.amazon.com/console",
         f"alice,,{mark('AWS access key')},{mark('AWS secret key')},https://123456789012.signin.aws.amazon.com/console"),
        (f"s3 = boto3.client('s3',\n    '{aws_id}',\n    '{aws_secret}')",
         f"s3 = boto3.client('s3',\n    '{mark('AWS access key')}',\n    '{mark('AWS secret key')}')"),
        (f'"{aws_secret}"\n"{aws_id}"', f'"{mark("AWS secret key")}"\n"{mark("AWS access key")}"'),
        # values named as secrets, and passwords in URLs, at a generated password's length and alphabet
        (f'password = "{password()}"', f'password = "{mark("a value named as a secret")}"'),
        (f"MOLLIE_API_KEY=test_{generated(30)}", f"MOLLIE_API_KEY={mark('a value named as a secret')}"),
        (f"BRAINTREE_ACCESS_TOKEN=access_token$production${draw(HEX, 16)}${draw(HEX, 32)}",
         f"BRAINTREE_ACCESS_TOKEN={mark('a value named as a secret')}"),
        (f"DATABASE_URL=postgres://shop:{draw(ALNUM, 24)}@db:5432/shop",
         f"DATABASE_URL=postgres://shop:{mark('password in a URL')}@db:5432/shop"),
        # what a user's attack found missed, in gitleaks' shapes
        (f"vault login hvs.{generated(24)}", f"vault login {mark('Vault token')}"),
        (f"vault login hvs.CAESI{draw(URL_SAFE, 86)}", f"vault login {mark('Vault token')}"),
        (f'"auth": "hvb.{generated(24)}{draw(URL_SAFE, 114)}"', f'"auth": "{mark("Vault token")}"'),
        (f"recovery: hvr.{generated(24)}", f"recovery: {mark('Vault token')}"),
        *[(f"doppler run --token dp.{kind}.{env}{generated(40)} -- ./app", f"doppler run --token "
           f"{mark('Doppler token')} -- ./app") for kind, env in [("st", "dev."), ("st", "prd_eu-2."), ("pt", ""),
                                                                   ("ct", ""), ("sa", "")]],
        (f"pulumi login --token pul-{draw(HEX, 40)}", f"pulumi login --token {mark('Pulumi token')}"),
        (f"curl -H 'Authorization: Bearer glsa_{generated(32)}_{draw(HEX, 8)}' https://g.example/api",
         f"curl -H 'Authorization: Bearer {mark('Grafana token')}' https://g.example/api"),
        (f"grafana: glc_{b64(json.dumps({'o': '1234', 'n': 'stack-5678', 'k': generated(24)}).encode())}",
         f"grafana: {mark('Grafana token')}"),
        (f"sentry-cli --auth-token sntrys_{b64(json.dumps(SENTRY_CLAIMS).encode())}_{draw(BASE64, 43)}",
         f"sentry-cli --auth-token {mark('Sentry token')}"),
        (f"sentry: sntryu_{draw(HEX, 64)}", f"sentry: {mark('Sentry token')}"),
        (f"jira -u me@x.io -t ATATT3xFfGF0{draw(URL_SAFE, 171)}={draw(HEX.upper(), 8)}",
         f"jira -u me@x.io -t {mark('Atlassian token')}"),
        (f"newrelic: NRAK-{draw(string.ascii_uppercase + string.digits, 27)}", f"newrelic: {mark('New Relic key')}"),
        (f"machine api.heroku.com login me@x.io password {draw(HEX, 36)}",
         f"machine api.heroku.com login me@x.io password {mark('a password in a .netrc')}"),
        (f"machine git.example.com\n  login me\n  password {generated(24)}\n",
         f"machine git.example.com\n  login me\n  password {mark('a password in a .netrc')}\n"),
    ]


def test_credentials_at_their_real_shape_are_withheld():
    for _ in range(RUNS):
        for text, shown in credentials():
            assert withhold(text) == shown, text


def test_a_value_beside_a_documented_example_is_still_withheld():
    """An example key on one line does not make a real one on the next an example."""
    aws_id, aws_secret = aws_pair()
    text = f"AKIAIOSFODNN7EXAMPLE\n{aws_id} {aws_secret}\n"
    assert withhold(text) == f"AKIAIOSFODNN7EXAMPLE\n{marker('AWS access key')} {marker('AWS secret key')}\n"


def test_a_lone_base64_value_of_forty_characters_is_no_aws_secret():
    """Without an access key id near it, 40 characters of base64 are a hash, an id, a nonce: they stay."""
    for _ in range(RUNS):
        text = f"nonce = {b64(secrets.token_bytes(30))}\nid = AKIA is a prefix\n"
        assert withhold(text) == text


@pytest.mark.parametrize("prefix", ["AIza", "EAAA", "key-", "MIIEvQIBAD"])
def test_a_prefix_inside_a_base64_blob_is_no_credential(prefix):
    """A base64 image holds any four characters about once in 16 million: a shape of a fixed length that a blob
    could go on past (Google's `AIza` and 35 more) is no key inside one. A key's DER start is, whatever holds it."""
    blob = b64(secrets.token_bytes(600))
    text = blob[:100] + prefix + draw(ALNUM, 60) + blob[100:]
    assert (withhold(text) == text) is (prefix != "MIIEvQIBAD")


def test_no_fixture_makes_withholding_slow():
    """Half a megabyte of values named as secrets, each a fixture's word and a long run: each is looked at once
    for a run in both cases (a draft's lookaheads from every character of a run took minutes on it)."""
    import time
    text = ('password="test' + "a" * 1990 + '"\n') * 250
    started = time.perf_counter()
    assert withhold(text) == text
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("before", ["", "> ", "#", "\\n"])
def test_no_blank_line_after_a_begin_line_makes_withholding_slow(before):
    """A BEGIN line and a line of spaces: the spaces before and after a line's prefix or comment sign are taken
    once (possessive); tried at every split, 400 of them took 17 s and 3,000 would take hours."""
    import time
    text = "-----BEGIN PRIVATE KEY-----\n" + before + " " * 3000 + "x\n"
    started = time.perf_counter()
    assert withhold(text) == text
    assert time.perf_counter() - started < 2


def test_a_command_output_cut_through_a_new_shape_shows_no_piece_of_it():
    """Kept as a head and a tail of 40 bytes each, the head ends inside a key's body (`base64 -w0`, no BEGIN line)
    or a Square token."""
    import io

    from harness.commands.shell import HeadAndTail
    for value in [b64(private_key_der()), f"EAAA{draw(URL_SAFE, 60)}"]:
        output = HeadAndTail(80)
        output.read_all(io.BytesIO(f"K={value}\n{'x' * 100}\nend\n".encode()))
        shown = output.text(lambda text, **cut: withhold(text, **cut))
        assert shown.startswith("K=[secret withheld: a token cut short]\n[... "), shown


def pem_key() -> str:
    """An RSA private key as `openssl genpkey` writes it (PKCS#8, 64 characters a line), or, without openssl, one
    made the same way: a PKCS#8 DER start and random bytes."""
    import shutil
    import subprocess
    if shutil.which("openssl"):
        made = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA"], capture_output=True, text=True)
        if made.returncode == 0 and "PRIVATE KEY" in made.stdout:
            return made.stdout
    return "\n".join(["-----BEGIN PRIVATE KEY-----", *pem_lines(private_key_der()), "-----END PRIVATE KEY-----"]) + "\n"


LINE_PREFIXES = {  # how a command shows a file's line n: each of these printed a key's body in clear
    "cat -n": lambda n: f"{n:6}\t",
    "grep -n .": lambda n: f"{n}:",
    "grep -rn . dir": lambda n: f"dir/file.md:{n}:",
    "grep -C1 (a context line)": lambda n: f"dir/file.md-{n}-",
    "quoted in an email": lambda n: "> ",
    "quoted twice": lambda n: "> > ",
}


@pytest.mark.parametrize("form", list(LINE_PREFIXES))
@pytest.mark.parametrize("whole", [True, False], ids=["whole", "cut before its END line"])
def test_a_private_key_behind_line_prefixes_is_withheld_whole(form, whole):
    """`cat -n key.pem`, `grep -n . key.pem`, a key quoted with "> ": each line of its body starts with what the
    command put there, and every one of them is withheld, not only the first."""
    lines = pem_key().splitlines()
    lines = lines + ["next line"] if whole else lines[:10]
    prefix = LINE_PREFIXES[form]
    text = "\n".join(prefix(n) + line for n, line in enumerate(lines, 1)) + "\n"
    n_key = len(lines) - 1 if whole else len(lines)
    shown = "\n".join([prefix(1) + marker("private key")] + [marker("private key")] * (n_key - 1))
    assert withhold(text) == shown + (f"\n{prefix(len(lines))}next line\n" if whole else "\n")


@pytest.mark.parametrize("form", list(LINE_PREFIXES))
def test_a_tail_cut_inside_a_prefixed_private_key_shows_none_of_it(form):
    """A long output kept as a head and a tail, the tail starting inside such a key: the rest of its body, each
    line behind its prefix, up to its END line, is withheld."""
    lines, prefix = pem_key().splitlines() + ["next line"], LINE_PREFIXES[form]
    text = "\n".join(prefix(n) + line for n, line in enumerate(lines, 1)) + "\n"
    tail = text[text.index(lines[5]) + 10:]
    assert withhold(tail, cut_before=True) == (f"{marker('the end of a token cut short')}\n"
                                               f"{prefix(len(lines))}next line\n")
