"""A labelled corpus of fake secrets in realistic contexts, plus near-misses.

Every secret is generated at test time from random characters in the real
format's shape (prefix, alphabet, length); none is a real credential. Each
positive case records the exact span and category a correct redactor reports,
so tests can check both detection and that nothing around the secret changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from lossless.redact.vendor_formats import VENDOR_FORMATS

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
B64 = ALNUM + "+/"
UPPER_DIGITS = string.ascii_uppercase + string.digits
SYMBOLS = "!#%^*-_+=~"


_CLASSES = (str.isupper, str.islower, str.isdigit)


@dataclass(frozen=True)
class Secret:
    start: int
    end: int
    category: str


@dataclass(frozen=True)
class Case:
    label: str
    text: str
    secrets: tuple[Secret, ...] = ()


class Gen:
    """Random secrets in the shape of real ones (seeded: reproducible)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def mixed(self, alphabet: str, n: int) -> str:
        """Random, with at least one upper, lower and digit (as generators produce)."""
        # Without one of those (or with fewer than three characters) the loop
        # below would never end.
        if n < 3 or not all(any(test(c) for c in alphabet) for test in _CLASSES):
            raise ValueError(f"mixed needs an upper, a lower and a digit in {n} of {alphabet!r}")
        while True:
            s = self.chars(alphabet, n)
            if (
                any(c.isupper() for c in s)
                and any(c.islower() for c in s)
                and any(c.isdigit() for c in s)
            ):
                return s

    def password(self) -> str:
        core = self.mixed(ALNUM, self.r.randint(10, 18))
        i = self.r.randint(1, len(core) - 1)
        return core[:i] + self.r.choice(SYMBOLS) + core[i:]

    def token(self) -> str:
        """An opaque API token/secret without a known prefix."""
        # Starts with a letter or digit: "--token -abc" would read as two flags.
        return self.r.choice(ALNUM) + self.mixed(ALNUM + "_-", self.r.choice([23, 31, 39]))

    def url_password(self) -> str:
        """Characters allowed unencoded in a URL's userinfo."""
        core = self.mixed(ALNUM, self.r.randint(10, 18))
        i = self.r.randint(1, len(core) - 1)
        return core[:i] + self.r.choice("!*-_.~$") + core[i:]

    def aws_access_key(self) -> str:
        return self.r.choice(["AKIA", "ASIA"]) + self.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)

    def aws_secret_key(self) -> str:
        return self.mixed(B64, 40)

    def github_token(self) -> str:
        if self.r.random() < 0.25:
            return "github_pat_" + self.mixed(ALNUM, 22) + "_" + self.mixed(ALNUM, 59)
        return self.r.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + self.mixed(ALNUM, 36)

    def gitlab_token(self) -> str:
        return "glpat-" + self.mixed(B64URL, 20)

    def anthropic_key(self) -> str:
        return "sk-ant-api03-" + self.mixed(B64URL, 93) + "AA"

    def openai_key(self) -> str:
        kind = self.r.random()
        if kind < 0.4:
            return "sk-" + self.mixed(ALNUM, 20) + "T3BlbkFJ" + self.mixed(ALNUM, 20)
        if kind < 0.8:
            return "sk-proj-" + self.mixed(B64URL, 156)
        return "sk-svcacct-" + self.mixed(B64URL, 120)

    def google_key(self) -> str:
        return "AIza" + self.mixed(B64URL, 35)

    def slack_token(self) -> str:
        prefix = self.r.choice(["xoxb", "xoxp", "xoxa", "xoxs"])
        return (
            f"{prefix}-{self.chars(string.digits, 12)}-{self.chars(string.digits, 13)}-"
            + self.mixed(ALNUM, 24)
        )

    def slack_webhook_path(self) -> str:
        return f"T{self.chars(UPPER_DIGITS, 10)}/B{self.chars(UPPER_DIGITS, 10)}/" + self.mixed(
            ALNUM, 24
        )

    def stripe_key(self) -> str:
        prefix = self.r.choice(["sk_live_", "rk_live_", "sk_test_"])
        return prefix + self.mixed(ALNUM, self.r.choice([24, 99]))

    def jwt(self) -> str:
        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

        header = {"alg": self.r.choice(["HS256", "RS256"]), "typ": "JWT"}
        payload = {
            "sub": str(uuid.UUID(int=self.r.getrandbits(128))),
            "iat": self.r.randint(1_600_000_000, 1_800_000_000),
            "name": self.chars(string.ascii_lowercase, 8),
        }
        sig = bytes(self.r.getrandbits(8) for _ in range(32))
        return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}.{b64(sig)}"

    def pem(self, kind: str = "RSA PRIVATE KEY") -> str:
        body = base64.b64encode(bytes(self.r.getrandbits(8) for _ in range(900))).decode()
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"

    def entropy_value(self) -> str:
        return self.mixed(B64, self.r.choice([32, 44, 64]))

    def hex(self, n: int) -> str:
        return self.chars("0123456789abcdef", n)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128)))


def sample_of(regex: str, r: random.Random) -> str:
    """A random string that the (simple) ``regex`` matches in full.

    Enough of the regex syntax for the vendor token bodies: literals, classes,
    ``\\d``, bounded repeats and alternations (repeats take a length near the
    low end, as real tokens are usually the shortest form).
    """
    return _emit(sre_parse.parse(regex), r)


def _emit(tree: Any, r: random.Random) -> str:
    out: list[str] = []
    for op, arg in tree:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "IN":
            choices: list[str] = []
            for item_op, item in arg:
                item_name = str(item_op)
                if item_name == "LITERAL":
                    choices.append(chr(item))
                elif item_name == "RANGE":
                    choices.extend(chr(c) for c in range(item[0], item[1] + 1))
                elif item_name == "CATEGORY":
                    choices.extend(string.digits)
            out.append(r.choice(choices))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, sub = arg
            n = low if high == low else r.randint(low, min(high, low + 8))
            out.extend(_emit(sub, r) for _ in range(n))
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1], r))
        elif name == "BRANCH":
            out.append(_emit(r.choice(arg[1]), r))
        elif name == "CATEGORY":
            out.append(r.choice(string.digits))
        else:
            raise ValueError(f"sample_of cannot generate {name}")
    return "".join(out)


#: Vendor prefixes that still need a boundary before them: the tail of common
#: words or of base64 data ("TASK" + hex holds "SK", "LOPEZ" "EZ", "rapidapi"
#: "dapi", "MSG." "SG.", "mexico-" "ico-", "ABSK" inside base64 blobs, "pul-"
#: before a git id). Every other format is also found glued to a name.
BOUNDED_VENDOR_PREFIXES = frozenset({"SK", "EZ", "dapi", "ABSK", "pul-", "ico-", "SG."})
#: What a token may be glued to: the end of an identifier, after "_", "-", a
#: letter or a digit ("OPENAI_KEY_sk-proj-...", "AWS_KEYAKIA...").
GLUED_BEFORE = ("OPENAI_KEY_", "x_", "token_", "run-", "AWS_KEY", "mykey", "build42")


def vendor_token(f: Any, r: random.Random) -> str:
    """A token of vendor format ``f`` (random body, checked to be diverse)."""
    while True:
        token = f.prefix + sample_of(f.body, r)
        if len(set(token[len(f.prefix) :])) >= 10:
            return token


def case(label: str, template: str, category: str, secret: str) -> Case:
    """A template with one ``{s}`` slot holding a secret of ``category``."""
    before, after = template.split("{s}")
    text = before + secret + after
    return Case(label, text, (Secret(len(before), len(before) + len(secret), category),))


def in_jsonl(label: str, template: str, category: str, secret: str) -> Case:
    """The same secret inside a JSONL record, where it is JSON-escaped."""
    inner = template.replace("{s}", secret)
    line = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": inner}]}},
        separators=(",", ":"),
    )
    escaped = json.dumps(secret)[1:-1]
    start = line.index(escaped)
    return Case(label, line, (Secret(start, start + len(escaped), category),))


def positives(seed: int = 20260101) -> list[Case]:
    g = Gen(seed)
    out: list[Case] = []

    def add(category: str, secret_fn: object, *templates: str) -> None:
        assert callable(secret_fn)
        for template in templates:
            out.append(case(f"{category}: {template[:40]}", template, category, secret_fn()))

    add(
        "aws_access_key",
        g.aws_access_key,
        "export AWS_ACCESS_KEY_ID={s}",
        "[default]\naws_access_key_id = {s}\nregion = eu-west-1\n",
        '{"AccessKeyId": "{s}", "Expiration": "2026-01-01T00:00:00Z"}',
        "2026-01-02 12:00:01 DEBUG boto: using key {s} for s3 upload",
        "aws configure set aws_access_key_id {s}",
    )
    add(
        "aws_secret_key",
        g.aws_secret_key,
        "[default]\naws_secret_access_key = {s}\n",
        "export AWS_SECRET_ACCESS_KEY={s}",
        '{"Credentials": {"SecretAccessKey": "{s}", "SessionToken": null}}',
        "aws_secret_access_key: {s}\n",
        'AWS_SECRET_ACCESS_KEY="{s}" terraform apply',
        "secretAccessKey: '{s}',",
    )
    add(
        "github_token",
        g.github_token,
        "export GITHUB_TOKEN={s}",
        "git clone https://x-access-token:{s}@github.com/org/repo.git",
        'curl -H "Authorization: token {s}" https://api.github.com/user',
        '{"github": {"oauth_token": "{s}"}}',
        "GH_TOKEN={s} gh pr list",
        "remote: Invalid username or token {s} was rejected",
    )
    add(
        "gitlab_token",
        g.gitlab_token,
        "export GITLAB_TOKEN={s}",
        'curl --header "PRIVATE-TOKEN: {s}" https://gitlab.example.com/api/v4/projects',
        "gitlab:\n  token: {s}\n",
    )
    add(
        "anthropic_api_key",
        g.anthropic_key,
        "export ANTHROPIC_API_KEY={s}",
        'client = anthropic.Anthropic(api_key="{s}")',
        '{"env": {"ANTHROPIC_API_KEY": "{s}"}}',
        "x-api-key: {s}",
    )
    add(
        "openai_api_key",
        g.openai_key,
        "OPENAI_API_KEY={s}",
        'openai.api_key = "{s}"',
        "Authorization: Bearer {s}",
        '{"apiKey": "{s}", "model": "gpt-5"}',
        "error: Incorrect API key provided: {s}.",
    )
    add(
        "google_api_key",
        g.google_key,
        "GOOGLE_API_KEY={s}",
        "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={s}",
        '{"api_key": "{s}"}',
    )
    add(
        "slack_token",
        g.slack_token,
        "SLACK_BOT_TOKEN={s}",
        'client = WebClient(token="{s}")',
        "slack:\n  token: {s}\n",
    )
    add(
        "slack_webhook",
        g.slack_webhook_path,
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{s}",
        'curl -X POST -d \'{"text":"hi"}\' https://hooks.slack.com/services/{s}',
        '{"webhook": "https://hooks.slack.com/services/{s}"}',
    )
    add(
        "stripe_key",
        g.stripe_key,
        "STRIPE_SECRET_KEY={s}",
        'stripe.api_key = "{s}"',
        "curl https://api.stripe.com/v1/charges -u {s}:",
    )
    add(
        "jwt",
        g.jwt,
        "Authorization: Bearer {s}",
        '{"access_token": "{s}", "token_type": "Bearer", "expires_in": 3600}',
        "Set-Cookie: session={s}; Path=/; HttpOnly",
        "decoded {s} with pyjwt",
        "https://app.example.com/callback?id_token={s}&state=abc",
    )
    add(
        "private_key",
        g.pem,
        "{s}\n",
        "$ cat ~/.ssh/id_rsa\n{s}\n$ ",
        "key.pem contents:\n\n{s}\n\nDone.",
    )
    out.append(case("private_key: openssh", "{s}\n", "private_key", g.pem("OPENSSH PRIVATE KEY")))
    out.append(case("private_key: pkcs8", "{s}", "private_key", g.pem("PRIVATE KEY")))
    out.append(case("private_key: ec", "x\n{s}\ny", "private_key", g.pem("EC PRIVATE KEY")))
    out.append(case("private_key: encrypted", "{s}", "private_key", g.pem("ENCRYPTED PRIVATE KEY")))
    out.append(
        in_jsonl(
            "private_key: in JSONL", "Here is the key:\n{s}\nkeep it safe", "private_key", g.pem()
        )
    )
    pem = g.pem()
    service_account = json.dumps(
        {"type": "service_account", "private_key_id": g.hex(40), "private_key": pem + "\n"}
    )
    start = service_account.index(json.dumps(pem)[1:-1])
    out.append(
        Case(
            "private_key: service account JSON (\\n escaped)",
            service_account,
            (Secret(start, start + len(json.dumps(pem)[1:-1]), "private_key"),),
        )
    )
    add(
        "url_password",
        g.url_password,
        "DATABASE_URL=postgres://app_user:{s}@db.internal:5432/app",
        "mysql://root:{s}@localhost/test",
        "REDIS_URL=redis://:{s}@cache:6379/0",
        "git remote add origin https://bob:{s}@git.example.com/team/repo.git",
        '{"broker_url": "amqp://guest2:{s}@rabbit:5672//"}',
        "mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/?retryWrites=true",
    )
    add(
        "password_assignment",
        g.password,
        "DB_PASSWORD={s}",
        "export PGPASSWORD='{s}'",
        'password = "{s}"',
        "  password: {s}\n",
        '  password: "{s}"\n',
        '{"username": "admin", "password": "{s}"}',
        "{'user': 'admin', 'passwd': '{s}'}",
        'conn = psycopg.connect(host="db", user="app", password="{s}")',
        "mysql -u root --password={s} app",
        "mysql -u root --password {s} app",
        "2026-01-02 10:11:12 INFO login user=bob password={s} status=ok",
        "DB_PWD={s}",
        "$password = '{s}';",
        'config.password = "{s}"',
        'password => "{s}",',
        "the password: {s} is what the installer printed",
        "PASSPHRASE={s}",
    )
    add(
        "password_assignment",
        g.token,
        "SECRET={s}",
        "client_secret: '{s}'",
        '"client_secret": "{s}",',
        "API_KEY={s}",
        'api_key = "{s}"',
        "X-Api-Key: {s}",
        "ACCESS_TOKEN={s}",
        'token: "{s}"',
        "secret_key = '{s}'",
        "--token {s}",
        'curl -H "Authorization: Bearer {s}" https://api.example.com',
        "Authorization: Basic {s}",
        'headers = {"Authorization": "Bearer {s}"}',
        "refresh_token={s}&grant_type=refresh_token",
        'webhook_secret: "{s}"',
    )
    add(
        "high_entropy_secret",
        g.entropy_value,
        "ENCRYPTION_KEY={s}",
        'signing_key: "{s}"',
        "SECRET_KEY_BASE={s}",
        "MASTER_KEY={s}",
        '{"auth": "{s}"}',
        "credentials = '{s}'",
        "session_key: {s}\n",
    )
    azure = g.entropy_value()
    out.append(
        case(
            "high_entropy_secret: azure connection string",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
            "high_entropy_secret",
            azure,
        )
    )
    # Secrets inside JSONL records (JSON-escaped strings of a transcript line).
    out.append(
        in_jsonl(
            "password_assignment: shell line in JSONL",
            "export DB_PASSWORD='{s}' && ./migrate",
            "password_assignment",
            g.password(),
        )
    )
    out.append(
        in_jsonl(
            "password_assignment: JSON config in JSONL",
            '{"db": {"password": "{s}"}}',
            "password_assignment",
            g.password(),
        )
    )
    out.append(
        in_jsonl(
            "password_assignment: .env in JSONL",
            "HOST=db\nDB_PASSWORD={s}\nPORT=5432\n",
            "password_assignment",
            g.password(),
        )
    )
    out.append(
        in_jsonl(
            "github_token: in JSONL", "export GITHUB_TOKEN={s}\n", "github_token", g.github_token()
        )
    )
    out.append(in_jsonl("jwt: in JSONL", 'token="{s}"', "jwt", g.jwt()))
    out.append(
        in_jsonl(
            "url_password: in JSONL", "postgres://u1:{s}@db/x", "url_password", g.url_password()
        )
    )
    # Every vendor format, in prose, as a JSON value and in a JSONL record.
    for f in VENDOR_FORMATS:
        for template in ("using {s} for the deploy", '{"credential": "{s}"}', "- {s}\n"):
            label = f"{f.category} ({f.prefix}): {template}"
            out.append(case(label, template, f.category, vendor_token(f, g.r)))
        out.append(
            in_jsonl(f"{f.category} ({f.prefix}): JSONL", "T={s}", f.category, vendor_token(f, g.r))
        )
    out.extend(glued(g))
    # Two secrets in one text.
    key_id, secret = g.aws_access_key(), g.aws_secret_key()
    text = f"aws_access_key_id={key_id}\naws_secret_access_key={secret}\n"
    out.append(
        Case(
            "aws pair",
            text,
            (
                Secret(text.index(key_id), text.index(key_id) + 20, "aws_access_key"),
                Secret(text.index(secret), text.index(secret) + 40, "aws_secret_key"),
            ),
        )
    )
    return out


def glued(g: Gen) -> list[Case]:
    """Every format whose prefix is distinctive, glued to the end of an identifier.

    The identifier stays; only the token, from its vendor prefix on, is a
    secret: ``OPENAI_KEY_[REDACTED:openai_api_key]``.
    """
    tokens: list[tuple[str, Any]] = [
        # A glued AWS key needs a digit in its body ("SLOVAKIA" + 16 capitals is
        # a word); 96% of real ones have one.
        ("aws_access_key", lambda: g.aws_access_key()[:-1] + g.r.choice("234567")),
        ("google_api_key", g.google_key),
        ("github_token", g.github_token),
        ("gitlab_token", g.gitlab_token),
        ("anthropic_api_key", g.anthropic_key),
        ("openai_api_key", g.openai_key),
        ("openai_api_key", lambda: "sk-admin-" + g.mixed(B64URL, 120)),
        (
            "stripe_key",
            lambda: g.r.choice(["sk_live_", "rk_live_"]) + g.mixed(ALNUM, g.r.choice([24, 99])),
        ),
        ("slack_token", g.slack_token),
        # The whole dotted three-part shape, not the "eyJ" anchor alone.
        ("jwt", g.jwt),
        # Stripe test keys: "risk_test_" is a word, so glued the body must
        # look random (the near misses hold the word-like ones).
        (
            "stripe_key",
            lambda: g.r.choice(["sk_test_", "rk_test_"]) + g.mixed(ALNUM, g.r.choice([24, 99])),
        ),
    ]
    for f in VENDOR_FORMATS:
        if f.prefix not in BOUNDED_VENDOR_PREFIXES:
            tokens.append((f.category, lambda f=f: vendor_token(f, g.r)))
    out: list[Case] = []
    for category, make in tokens:
        for before in GLUED_BEFORE:
            token = make()
            label = f"{category} glued to {before!r}: {token[:12]}"
            out.append(case(label, before + "{s} was set", category, token))
        token = make()
        out.append(in_jsonl(f"{category} glued, JSONL: {token[:12]}", "T=x_{s}", category, token))
    return out


def near_misses(seed: int = 7) -> list[Case]:
    g = Gen(seed)
    image = base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(3000))).decode()
    png = "iVBORw0KGgoAAAANSUhEUgAA" + image
    integrity = base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode()
    texts = [
        # git ids, digests, uuids
        f"commit {g.hex(40)}\nAuthor: A <a@example.com>\n",
        f"git checkout {g.hex(7)} && git cherry-pick {g.hex(12)}",
        f'{{"sha": "{g.hex(40)}", "parents": [{{"sha": "{g.hex(40)}"}}]}}',
        f"sha256:{g.hex(64)}",
        f"{g.hex(64)}  lossless-0.1.0.tar.gz",
        f'"digest": "sha256:{g.hex(64)}"',
        f"checksum={g.hex(64)}",
        f'{{"sessionId": "{g.uuid()}", "uuid": "{g.uuid()}"}}',
        f"request_id={g.uuid()} trace_id={g.hex(32)}",
        f'"prompt_cache_key": "{g.uuid()}"',
        f"cache_key={g.hex(64)}",
        f'"idempotency_key": "{g.uuid()}"',
        f"private_key_id: {g.hex(40)}",
        # images, integrity hashes, opaque blobs that are not credentials
        f"data:image/png;base64,{png}",
        json.dumps(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": png},
            }
        ),
        f'"integrity": "sha512-{integrity}"',
        f"sha1-{base64.b64encode(hashlib.sha1(b'x').digest()).decode()}",
        f'{{"type": "thinking", "signature": "{g.entropy_value() * 6}"}}',
        f'{{"type": "reasoning", "encrypted_content": "gAAAAAB{g.entropy_value() * 8}"}}',
        "data:application/json;base64," + base64.b64encode(b'{"a": 1, "b": [1, 2]}').decode(),
        # paths and long identifiers
        "/home/user/.ssh/id_rsa and ~/.aws/credentials and src/auth/token_manager.py",
        "C:\\Users\\me\\secrets\\key.pem",
        "password_reset/views.py:42: def password_reset_confirm(request, token):",
        "AccessTokenRefreshHandlerFactory.createForSecretStore(passwordPolicy)",
        "test_token_refresh_with_expired_credentials_raises_error PASSED",
        "get_user_password_hash_from_database()",
        # placeholders
        "password=<your-password>",
        "password=${DB_PASSWORD}",
        "password=changeme",
        "PASSWORD=$DB_PASSWORD",
        'api_key: "your_api_key_here"',
        'token: "xxxxxxxxxxxxxxxx"',
        'password: "********"',
        '"password": "[REDACTED]"',
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "OPENAI_API_KEY=sk-...",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        'password: "{{ vault_db_password }}"',
        'token = "%(token)s" % params',
        "secret: ${{ secrets.DEPLOY_KEY }}",
        "postgres://user:${DB_PASSWORD}@localhost/db",
        "https://user:<password>@example.com/",
        "mysql://root:password@localhost/test",
        "export API_KEY=<api-key>",
        "token: YOUR_TOKEN",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        # prose
        "Please reset your password using the link we sent.",
        "The token expired; request a new one from the dashboard.",
        "password: must be at least 12 characters long",
        "Make sure the API key is set before running the script.",
        "Set the `password` field in config.yaml, then restart.",
        "We use token-based auth with short-lived secrets.",
        "the secret: keep it out of the repository",
        "Authentication failed: wrong password for user bob.",
        # code that handles secrets without containing them
        "def login(username: str, password: str) -> bool:",
        'token = request.headers.get("Authorization")',
        "user = authenticate(username=username, password=password)",
        "client = OpenAI(api_key=settings.OPENAI_API_KEY)",
        "self.token = token",
        "const apiKey = process.env.API_KEY;",
        "  password: hashedPassword,",
        "if token == expected_token:",
        "password: z.string().min(12),",
        "token: string;",
        "api_key=os.environ['OPENAI_API_KEY']",
        'token := os.Getenv("TOKEN")',
        "TOKEN=$(gh auth token)",
        '"input_tokens": 1234, "output_tokens": 567, "cache_read_input_tokens": 89',
        "max_tokens=4096",
        'token_type: "Bearer"',
        '"tokenizer": "cl100k_base"',
        "token_count = 12",
        "PWD=/home/user/project",
        'SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"',
        "apiKey: 'proxy-handled',",
        "apiKey: 'ollama',",
        "CODEMIE_API_KEY: 'sk-secret'",
        'url = "https://api.example.com/login?password=" + password',
        "password_hash = bcrypt.hashpw(password, salt)",
        'secret_name: "prod/db/credentials"',
        "password_min_length: 12",
        "token_url: https://oauth2.googleapis.com/token",
        "SECRET_KEY_FILE=/run/secrets/django_key",
        "pass",
        "bypassPermissions",
        "monkey = 3",
        # sk-/eyJ/AKIA shapes that are not keys
        "task-2024-01-15-migration-plan-final-v2",
        "risk-assessment-for-the-new-payment-flow-2026",
        "pip install scikit-learn  # sk-learn",
        "eyJhbGciOiJIUzI1NiJ9 is just a header",
        # "eyJ" glued or inside base64 data without a JWT's dotted three parts
        "session_eyJhbGciOiJIUzI1NiJ9 is just a header",
        "x_eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0 has no second dot",
        "data:text/plain;base64," + g.chars(B64, 80) + "eyJhbGciOiJIUzI1NiJ9" + g.chars(B64, 80),
        g.chars(B64URL, 100) + "eyJ" + g.chars(B64URL, 200) + "==",
        "a.b.eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c.d",
        # Stripe test prefixes ending words, with word-like bodies
        "risk_test_results_for_the_quarterly_review_2024",
        "risk_test_ResultsForTheQuarterlyReview",
        "mask_test_previewEnabledForAllUsers",
        "bookmark_test_previewEnabled2",
        "desk_test_HandlesLargeInputValues",
        # the tail of a word or identifier that spells a token prefix
        "task-manager-service-2024-refactor-plan-v2",
        "mask_live_previewEnabled2",
        "desk-proj-MyProjectMigrationPlan2024FinalReady",
        "task-proj-2024-01-15-migration-plan-final-v2-ABC",
        "risk-ant-colony-simulation-2024-final-draft-v3",
        "bookmark_live_previewEnabledForAllUsers",
        "risk_test_HandlesLargeInputValues2",
        "highs_AndLowsOfTheMarketDuringTheLastDecade",
        "laughs_AtTheVeryLongCamelCaseIdentifierName",
        "read_github_pat_from_environment_variable_or_file",
        "pnpm_storeDirectoryForTheWorkspaceRootPkg",
        "EURASIAPACIFICREGIONSXY and SLOVAKIABRATISLAVAREGION",
        "TASK0123456789abcdef0123456789abcdef done",
        "MEXICO-CITY-OFFICE-IS-OPENING-SOON-AT-LAST ico-",
        "devops_the_long_pipeline_name_for_the_nightly_build_job",
        # a prefix inside random base64url data (a Fernet blob, a signature)
        "gAAAAAB" + g.chars(B64URL, 120) + "ghs_" + g.mixed(ALNUM, 36) + "-" + g.chars(B64URL, 40),
        g.mixed(B64URL, 64) + "sk-proj-" + g.mixed(B64URL, 80) + "." + g.mixed(B64URL, 20),
        # URLs without credentials
        "https://user@github.com/org/repo.git",
        "https://example.com:8080/path?next=/x&email=a@b.com",
        "ssh://git@github.com:22/org/repo.git",
        "git@github.com:org/repo.git",
        "http://localhost:3000/api/auth/callback",
        # PEM that is not a private key, and code that mentions the markers
        "-----BEGIN PUBLIC KEY-----\n"
        + base64.b64encode(bytes(range(200))).decode()
        + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----",
        'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):',
        'pem = pem.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "")',
        "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
        # already redacted
        "password=[REDACTED:password_assignment]",
        "Authorization: Bearer [REDACTED:jwt]",
        "postgres://u:[REDACTED:url_password]@db/x",
    ]
    return [Case(f"near-miss: {t[:50]!r}", t) for t in texts]
