"""Built-in secret detectors.

Every detector reports ``Finding(start, end, category)`` spans that cover *only*
the secret: a key name, its quotes, a URL's scheme/user/host or a PEM's
surroundings are never part of a span.

Speed: every detector needs a literal anchor (``A``KIA, ``ghp_``, ``sk-``,
``eyJ``, ``://``, ``-----BEGIN``, a vendor prefix ...) or, for name = value
assignments, a keyword (``password``, ``token`` ...) in any ASCII case. Two
Aho-Corasick passes (``ahocorasick_rs``, in native code) find every anchor and
every keyword of a text at once, and only the detectors whose anchor occurs
run; the assignment detector starts from the keyword positions. Clean text
costs those two passes (~250 MB/s together) instead of one scan per detector.
Each regex still starts with a literal, so CPython's ``re`` scans to it with a
fast substring search. Every quantifier is bounded, so the worst case stays
linear (a megabyte of one prefix repeated takes 30-130 ms).

Secret-looking names: a *password* name (``password``, ``passwd``, ``pwd``,
``pass``, ``passphrase`` as the last word) makes any literal value a secret; a
*token* name (last word ``secret``/``token``/``api_key``/``authorization``...)
needs a value that is not made of words; a *weak* name (any word ``key``,
``auth``, ``credentials``, ``secret``...) needs a value of 20+ characters with
Shannon entropy >= ``ENTROPY_THRESHOLD`` that is not hex, a UUID or words.

False-positive rules (what is deliberately NOT a secret):

* Values that are placeholders: empty or without any letter/digit (``***``,
  ``...``), environment/template references (``$VAR``, ``${VAR}``, ``$(cmd)``,
  ``%(name)s``, ``{name}``, ``{{ var }}``, ``<your-password>``, ``[...]``),
  obvious dummies (``changeme``, ``example``, ``placeholder``, ``xxxx``,
  ``your_api_key_here``, ``redacted``, ``dummy``, ``sample``), bare words that
  name the thing itself (``password``, ``secret``, ``token``) and literals such as
  ``null``/``None``/``true``/``string``. A default like ``changeme`` is public
  knowledge, so hiding it protects nothing.
* Values that are code, not data: an unquoted identifier or dotted path without
  digits (``password=password``, ``token: string``, ``api_key=settings.KEY``),
  or anything followed by ``(`` or ``[`` (``os.environ[...]``, ``get_token()``).
  Exception: ``UPPER_CASE_NAME=value`` (dotenv/shell style) with a password name,
  where an unquoted word is a literal.
* File paths and URLs (``PWD=/home/me``, ``token_file: ./x``, ``token_url: https://``).
* Quoted values that contain whitespace (prose such as ``"Enter your password"``).
* For token/secret/api-key names, values that read as words rather than random
  characters (``apiKey: 'ollama'``, ``'proxy-handled'``, ``'not-required'``,
  pure numbers such as ``max_token: 4096``); password names accept any literal.
* Names that describe a secret but do not hold one (``token_type``,
  ``password_policy``, ``secret_name``, ``token_count``, ``*_id``, ``*_url`` ...).
* For the weaker names scored by entropy (``*_key``, ``auth``, ``credentials``),
  hex strings and UUIDs (digests, ids, cache keys) never count.
* Bare hashes, UUIDs, git ids, base64 image data and ``sha512-`` integrity
  strings are never matched: only prefixed token formats, assignments to
  secret-looking names, URL passwords and PEM blocks are.
* Text already redacted (``[REDACTED:...]``) is left alone.
* A prefix glued to the end of a word is a token only if the format is
  distinctive (``sk-proj-``, ``ghp_``, ``AKIA``, a JWT's whole dotted shape
  ..., not plain ``sk-``, ``SK``, ``EZ``...), what follows looks random where
  the prefix also ends words ("highs_AndLows...", "task-proj-2024-plan-v2",
  "pnpm_...", "risk_test_...")
  and what precedes is a name, not random data (a prefix inside a base64url
  blob). The name stays: ``OPENAI_KEY_[REDACTED:openai_api_key]``.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Final, NamedTuple

import ahocorasick_rs

from lossless.redact.vendor_formats import (
    NEXT_TOKEN,
    VENDOR_CATEGORIES,
    VENDOR_FORMATS,
    WORD_TAIL_PREFIXES,
    find_vendor_tokens,
)

PLACEHOLDER_PREFIX: Final = "[REDACTED:"


def placeholder(category: str) -> str:
    """The text that replaces a secret of ``category``."""
    return f"{PLACEHOLDER_PREFIX}{category}]"


# Categories, in priority order: when findings overlap, the merged span takes the
# category of the most specific detector.
AWS_ACCESS_KEY: Final = "aws_access_key"
AWS_SECRET_KEY: Final = "aws_secret_key"
GITHUB_TOKEN: Final = "github_token"
GITLAB_TOKEN: Final = "gitlab_token"
ANTHROPIC_API_KEY: Final = "anthropic_api_key"
OPENAI_API_KEY: Final = "openai_api_key"
GOOGLE_API_KEY: Final = "google_api_key"
SLACK_TOKEN: Final = "slack_token"
SLACK_WEBHOOK: Final = "slack_webhook"
STRIPE_KEY: Final = "stripe_key"
JWT: Final = "jwt"
PRIVATE_KEY: Final = "private_key"
URL_PASSWORD: Final = "url_password"
PASSWORD_ASSIGNMENT: Final = "password_assignment"
HIGH_ENTROPY_SECRET: Final = "high_entropy_secret"

CATEGORIES: Final[tuple[str, ...]] = (
    PRIVATE_KEY,
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    GITHUB_TOKEN,
    GITLAB_TOKEN,
    ANTHROPIC_API_KEY,
    OPENAI_API_KEY,
    GOOGLE_API_KEY,
    SLACK_TOKEN,
    SLACK_WEBHOOK,
    STRIPE_KEY,
    JWT,
    *VENDOR_CATEGORIES,
    URL_PASSWORD,
    PASSWORD_ASSIGNMENT,
    HIGH_ENTROPY_SECRET,
)

#: Lower wins. User patterns rank after every specific format but before the
#: two name-based heuristics: a user's explicit pattern is better evidence.
PRIORITY: Final[dict[str, int]] = {c: 10 * i for i, c in enumerate(CATEGORIES)}
USER_PRIORITY: Final = PRIORITY[URL_PASSWORD] + 5

#: Shannon entropy (bits per character) a value needs to count as random when
#: it is assigned to a weakly secret-looking name. Random base64/alphanumeric
#: strings of 20+ characters score 3.3-4.6; the structural rules (no words, no
#: hex, no UUIDs) do the rest of the filtering.
ENTROPY_THRESHOLD: Final = 3.2
MIN_ENTROPY_LENGTH: Final = 20

#: Case-sensitive literals: a built-in detector can only fire if the text
#: contains one of these ...
LITERAL_ANCHORS: Final[tuple[str, ...]] = (
    "AKIA",
    "ASIA",
    "AIza",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "xox",
    "hooks.slack.com/",
    "eyJ",
    "-----BEGIN",
    "://",
    # The vendor formats' prefixes (``vendor_formats``).
    *sorted({f.prefix for f in VENDOR_FORMATS}),
)
#: ... or one of these keywords, in any ASCII case.
KEYWORDS: Final[tuple[str, ...]] = ("pass", "pwd", "secret", "token", "key", "auth", "credential")


class Finding(NamedTuple):
    """A secret at ``text[start:end]``."""

    start: int
    end: int
    category: str


# Both lists are searched in one pass each by an Aho-Corasick automaton (C
# speed, ~500 MB/s for all of them together, where ``str.find`` per literal
# runs ~20 scans): over the UTF-8 bytes for the case-sensitive anchors, over
# the ASCII-lowered bytes for the keywords. ASCII never occurs inside a
# multi-byte UTF-8 sequence, so the bytes hold an anchor exactly when the text
# does, and ``bytes.lower`` folds only ASCII (``str.lower`` would turn the
# Kelvin sign into "k"). Overlapping matches: every occurrence is reported,
# also one that starts inside another ("passk-" holds "pass" and "sk-").
_ANCHOR_SEARCH: Final = ahocorasick_rs.BytesAhoCorasick([a.encode() for a in LITERAL_ANCHORS])
_KEYWORD_SEARCH: Final = ahocorasick_rs.BytesAhoCorasick([k.encode() for k in KEYWORDS])


def anchors_in(data: bytes) -> frozenset[str]:
    """The literal anchors that occur in ``data`` (a text's UTF-8 bytes)."""
    found = _ANCHOR_SEARCH.find_matches_as_indexes(data, overlapping=True)
    return frozenset(LITERAL_ANCHORS[i] for i, _, _ in found)


def has_anchor(text: str) -> bool:
    """Whether any built-in detector could fire on ``text`` (cheap pre-check)."""
    return bool(anchors_in(text.encode("utf-8", "surrogatepass"))) or bool(keyword_hits(text))


def keyword_hits(text: str, data: bytes | None = None) -> list[int]:
    """Start offsets of every keyword in ``text``, in any ASCII case, sorted.

    ``data`` is ``text``'s UTF-8 encoding (``surrogatepass``) if the caller
    has it. Only ASCII letters are folded: a non-ASCII character never forms a
    keyword.
    """
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    found = _KEYWORD_SEARCH.find_matches_as_indexes(data.lower(), overlapping=True)
    if not found:
        return []
    byte_hits = sorted(start for _, start, _ in found)
    if len(data) == len(text):  # ASCII: byte offsets are character offsets
        return byte_hits
    # Map byte offsets back to character offsets, decoding each stretch once.
    hits: list[int] = []
    char_pos = byte_pos = 0
    for b in byte_hits:
        char_pos += len(data[byte_pos:b].decode("utf-8", "surrogatepass"))
        byte_pos = b
        hits.append(char_pos)
    return hits


# --------------------------------------------------------------------------- helpers


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ALNUM: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_TOKEN_CHARS: Final = _ALNUM | {"_", "-"}
_B64_CHARS: Final = _ALNUM | {"+", "/", "=", "_", "-"}


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


_PIECES: Final = re.compile(r"[A-Za-z0-9]+")


# lower, UPPER, or CamelCase whose capitals (or acronyms: "HTTPServer") each
# start a lower-case run of two or more letters. Random mixed-case letters
# almost always contain a lone lower-case letter between capitals ("mGLAnUU").
_WORD_LIKE: Final = re.compile(r"[a-z]*(?:[A-Z]+[a-z]{2,})*[A-Z]*")


def _word_like(piece: str) -> bool:
    """A run of letters that reads like words rather than random characters."""
    return _WORD_LIKE.fullmatch(piece) is not None


def is_wordy(value: str) -> bool:
    """True if ``value`` is made of words and numbers, not random characters.

    ``proxy-handled``, ``claude-3-5-sonnet-20241022``, ``AccessTokenHandler`` and
    ``4096`` are wordy; ``abc123def``, ``s3cr3t`` and ``Zm9vYmFy`` are not.
    """
    for piece in _PIECES.findall(value):
        if piece.isdigit():
            continue
        if piece.isalpha() and _word_like(piece):
            continue
        return False
    return True


_HEX: Final = re.compile(r"[0-9a-fA-F]+")
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

_PLACEHOLDER_WORDS: Final = _words(
    """
    password passwd pass pwd passphrase secret secrets token tokens apikey api_key api-key key
    changeme change_me change-me null none nil undefined true false yes no on off string str
    int bytes bool boolean any optional required env default empty hidden masked test testing
    foo bar baz foobar qux value secretstr secret_key secretkey mysecret mypassword mytoken
    """
)
_PLACEHOLDER_SHAPE: Final = re.compile(
    r"""
      \$[{(]                      # ${VAR} ${{ secrets.X }} $(command)
    | \$[A-Za-z_]                 # $VAR
    | %\(?[A-Za-z_]*\)?[sd]       # %s %(name)s
    | \{\{                        # {{ template }}
    | \{[^{}]*\}                  # {name} format field
    | <[^<>]*>                    # <your-password>
    | \[[^\[\]]*\]                # [secret] [REDACTED_TOKEN]
    """,
    re.VERBOSE,
)
# Long marker words may appear anywhere (a random token contains a given
# 6-letter word with odds ~1e-9); short ones only as whole words, because random
# tokens do contain "todo" or "here" now and then.
_PLACEHOLDER_TEXT: Final = re.compile(
    r"x{6,}|\*{3,}|\.{3}|…|changeme|change[-_]me|example|placeholder|redacted|replace"
    r"|(?<![a-z0-9])(?:your|here|todo|fixme|dummy|sample|insert|xxxx?)(?![a-z0-9])",
)
_REPEATED: Final = re.compile(r"(.)\1*")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret instead of being one."""
    if not any(c.isalnum() for c in value):
        return True
    if PLACEHOLDER_PREFIX in value or _PLACEHOLDER_SHAPE.match(value):
        return True
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or _PLACEHOLDER_TEXT.search(low):
        return True
    # "aaaaaaaa", "00000000": a single repeated character.
    return len(value) >= 4 and _REPEATED.fullmatch(value) is not None


def _low_diversity(body: str, minimum: int) -> bool:
    """Fixtures such as ``'a' * 95`` have a handful of distinct characters."""
    return len(set(body)) < minimum


def _mixed(body: str) -> bool:
    """Has upper case, lower case and digits: true of any long random token."""
    return (
        any(c.isdigit() for c in body)
        and any(c.islower() for c in body)
        and any(c.isupper() for c in body)
    )


# ----------------------------------------------------------------- prefixed formats

# Each pattern starts with a literal so ``re`` can use its fast substring search.
# Where the anchor's first letter is common ("s" of "sk-", "e" of "eyJ"), the
# pattern starts at its rarest one instead and looks behind for the rest: the
# search stops at a fifth as many places (3.5 and 5.8 ms less per 13 MB of
# transcript). Such a match starts inside the anchor; ``_SK_BACK``/``_JWT_BACK``
# undo that. It finds the same matches: a previous match ends where no token
# character follows, so the next one cannot start before its end.
#
# Left boundary: a token character just before a prefix often means the prefix
# is the tail of a word ("task-..." holds "sk-", "risk_test_" "sk_test_").
# Plain "sk-" keys keep a look-behind that rejects those, placed *after* the
# literal (a leading one would disable the fast search).
# Every other format here has a prefix distinctive enough to be matched glued
# to the end of a name too ("OPENAI_KEY_sk-proj-...", "AWS_KEYAKIA...",
# "token_ghp_...", "session_eyJ..."); ``_add_prefixed`` and ``_accept_glued``
# then ask more of such a match. The right boundary: no token character follows, or the prefix
# of another token glued to this one (``NEXT_TOKEN``).
_END: Final = rf"(?:(?![A-Za-z0-9_-])|(?={NEXT_TOKEN}))"
_END_ALNUM: Final = rf"(?:(?![A-Za-z0-9])|(?={NEXT_TOKEN}))"
_END_WORD: Final = rf"(?:(?![A-Za-z0-9_])|(?={NEXT_TOKEN}))"
_A_RE: Final = re.compile(
    rf"A(?:(?P<aws>[KS]IA[A-Z0-9]{{16}}){_END_ALNUM}"
    rf"|(?P<google>Iza[A-Za-z0-9_-]{{35}}){_END})"
)
_G_RE: Final = re.compile(
    rf"g(?:(?P<github>h[pousr]_[A-Za-z0-9]{{36,255}}|ithub_pat_[A-Za-z0-9_]{{22,255}}){_END_WORD}"
    rf"|(?P<gitlab>lpat-[A-Za-z0-9_-]{{20,64}}){_END})"
)
# Glued, only the fixed prefixes: sk-ant-, sk-proj-, sk-svcacct-, sk-admin-,
# the legacy key's "T3BlbkFJ" marker after exactly 20 characters, sk_live_,
# sk_test_ (its body must then look random: "risk_test_..." is a word).
_SK_RE: Final = re.compile(
    r"k(?<=sk)(?:(?<![A-Za-z0-9_-]sk)|(?=-ant-|-proj-|-svcacct-|-admin-|-[A-Za-z0-9]{20}T3BlbkFJ|_live_|_test_))"
    r"(?:(?P<anthropic>-ant-[A-Za-z0-9_-]{20,400})"
    r"|(?P<openai>-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,400})"
    rf"|(?P<stripe>_(?:live|test)_[A-Za-z0-9]{{10,255}})){_END}"
)
_SK_BACK: Final = 1  # the "s" before the match
_OPENAI_PREFIX: Final = re.compile(r"^sk-(?:proj-|svcacct-|admin-)?")
_RK_RE: Final = re.compile(rf"rk_(?:live|test)_[A-Za-z0-9]{{10,255}}{_END}")
_SLACK_RE: Final = re.compile(rf"xox[abposre]-[A-Za-z0-9-]{{10,255}}{_END}")
# A JWT is found glued to a name too ("session_eyJ..."): its whole dotted
# three-part shape is distinctive, though "eyJ" alone turns up in base64 data.
# So the header's run is matched possessively and the rest is optional: where
# the rest fails (no ".ey..." payload and signature), the match still ends at
# the end of that run and the search goes on after it, so each "eyJ" inside
# one run of base64url characters is not tried again (a megabyte of "eyJ"
# repeated would otherwise cost up to 4096 characters per "eyJ"). It skips no
# JWT the old look-behind found: a later "eyJ" in the same run meets the same
# end of the run. Only a glued one more than 4096 characters after an "eyJ" of
# the same run could be missed. After "." or "+" (a dotted chain, standard
# base64) it is still no JWT.
_JWT_RE: Final = re.compile(
    r"J(?<=eyJ)(?<![.+]eyJ)[A-Za-z0-9_-]{8,4096}+"
    r"(?P<jwt>\.ey[A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{0,4096}(?![A-Za-z0-9_.+=-]))?"
)
_JWT_BACK: Final = 2  # the "ey" before the match


def _matches(regex: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    """``regex.finditer(text)``, cheaper when there is no match.

    A failed ``search`` costs about half an empty ``finditer`` (no scanner
    object), which adds up over the ~10 detector regexes run on every text.
    """
    first = regex.search(text)
    if first is None:
        return ()
    # Resuming at the first match finds the same matches: searching is
    # leftmost-first, and look-behinds still see the text before ``pos``.
    return regex.finditer(text, first.start())


# The anchors each prefixed-format regex needs (one of them) to match at all.
_A_ANCHORS: Final = frozenset({"AKIA", "ASIA", "AIza"})
_G_ANCHORS: Final = frozenset({"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-"})
_SK_ANCHORS: Final = frozenset({"sk-", "sk_live_", "sk_test_"})
_RK_ANCHORS: Final = frozenset({"rk_live_", "rk_test_"})


def _find_prefixed(text: str, found: list[Finding], present: frozenset[str]) -> None:
    """The prefixed token formats whose anchor is in ``present`` (the anchors
    that occur in ``text``)."""
    glued: list[Finding] = []  # found glued to a name: see _accept_glued
    for m in _matches(_A_RE, text) if present & _A_ANCHORS else ():
        start, end = m.span()
        if m.lastgroup == "aws":
            body = m[0][4:]
            if _low_diversity(body, 5) or is_placeholder(m[0]):
                continue
            if _glued(text, start, _AWS_LEFT):
                # "SLOVAKIA" + 16 capitals is a word; a key has a digit (96% do).
                if any(c.isdigit() for c in body):
                    glued.append(Finding(start, end, AWS_ACCESS_KEY))
            else:
                found.append(Finding(start, end, AWS_ACCESS_KEY))
        elif not _low_diversity(m[0][4:], 8) and not is_placeholder(m[0][4:]):
            google = Finding(start, end, GOOGLE_API_KEY)
            _add_prefixed(text, google, m[0][4:], found, glued, word_tail=False, left=_GOOGLE_LEFT)
    for m in _matches(_G_RE, text) if present & _G_ANCHORS else ():
        start, end = m.span()
        github = m.lastgroup == "github"
        body = m[0].split("_", 2)[-1] if github else m[0][6:]
        if not _low_diversity(body, 8) and not is_placeholder(body):
            category = GITHUB_TOKEN if github else GITLAB_TOKEN
            _add_prefixed(text, Finding(start, end, category), body, found, glued, word_tail=github)
    for m in _matches(_SK_RE, text) if present & _SK_ANCHORS else ():
        start, end = m.start() - _SK_BACK, m.end()
        token = text[start:end]
        kind = m.lastgroup
        if kind == "anthropic":
            body = token[7:]
            if _low_diversity(body, 10) or not any(c.isdigit() for c in body):
                continue
            category = ANTHROPIC_API_KEY
        elif kind == "openai":
            body = _OPENAI_PREFIX.sub("", token)
            # kebab-case names ("sk-my-feature-branch-2") lack mixed case.
            if not _mixed(body) or _low_diversity(body, 10):
                continue
            category = OPENAI_API_KEY
        else:
            body = token[8:]
            if _low_diversity(body, 6):
                continue
            category = STRIPE_KEY
        if not is_placeholder(body):
            _add_prefixed(text, Finding(start, end, category), body, found, glued, word_tail=True)
    for m in _matches(_RK_RE, text) if present & _RK_ANCHORS else ():
        body = m[0][8:]
        if not _low_diversity(body, 6) and not is_placeholder(body):
            stripe = Finding(m.start(), m.end(), STRIPE_KEY)
            _add_prefixed(text, stripe, body, found, glued, word_tail=True)
    for m in _matches(_SLACK_RE, text) if "xox" in present else ():
        body = m[0][5:]
        if any(c.isdigit() for c in body) and not is_placeholder(body) and not is_wordy(body):
            # The body already needs a digit and no words.
            slack = Finding(m.start(), m.end(), SLACK_TOKEN)
            _add_prefixed(text, slack, body, found, glued, word_tail=False)
    for m in _matches(_JWT_RE, text) if "eyJ" in present else ():
        if m["jwt"] is not None:
            jwt = Finding(m.start() - _JWT_BACK, m.end(), JWT)
            # Glued, the name before it must not look random (_accept_glued).
            (glued if _glued(text, jwt.start) else found).append(jwt)
    for v in find_vendor_tokens(text, present):
        if not _low_diversity(v.body, 6) and not is_placeholder(v.body):
            # A bounded format's regex never matches glued.
            vendor = Finding(v.start, v.end, v.category)
            word_tail = v.prefix in WORD_TAIL_PREFIXES
            _add_prefixed(text, vendor, v.body, found, glued, word_tail=word_tail)
    if glued:
        _accept_glued(text, found, glued)


# ---------------------------------------------------------- tokens glued to a name

# What the old left boundary rejected before each prefix: a match with one of
# these just before it is glued to a name.
_GLUE_CHARS: Final = _TOKEN_CHARS
_AWS_LEFT: Final = _ALNUM | {"+"}
_GOOGLE_LEFT: Final = _TOKEN_CHARS | {"+"}
_NAME_CHARS: Final = _GOOGLE_LEFT
#: How much of the name before a glued token is read.
_GLUE_LOOKBACK: Final = 32
#: Names shorter than this are never judged random ("x_", "k9-").
_MIN_RANDOM_NAME: Final = 8


def _glued(text: str, start: int, left: frozenset[str] = _GLUE_CHARS) -> bool:
    return start > 0 and text[start - 1] in left


def _add_prefixed(
    text: str,
    finding: Finding,
    body: str,
    found: list[Finding],
    glued: list[Finding],
    *,
    word_tail: bool,
    left: frozenset[str] = _GLUE_CHARS,
) -> None:
    """Keep ``finding`` now or, glued to a name, for ``_accept_glued``.

    ``word_tail``: the prefix is also the tail of common words ("highs_" ends
    in "ghs_", "task-proj-" holds "sk-proj-", "bookmark_live_" "rk_live_",
    "pnpm_" "npm_"), so glued, the body must look random, not like the name
    going on.
    """
    if not _glued(text, finding.start, left):
        found.append(finding)
    elif not word_tail or looks_random(body):
        glued.append(finding)


# Camel-case words: "HTTPServer" -> HTTP, Server; "xKqP9" -> x, Kq, P.
_CAMEL_WORDS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
_LETTER_DIGIT: Final = re.compile(r"[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])")
_LONE_LOWER: Final = re.compile(r"(?<=[A-Z])[a-z](?=[A-Z])")
_CONSONANTS: Final = re.compile(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5,}")


#: The characters of a value ``looks_random`` reads: enough to tell, and a
#: bound on its cost for 400-character bodies.
_RANDOM_SAMPLE: Final = 64


def looks_random(value: str) -> bool:
    """Whether ``value`` reads as random characters rather than a name's words.

    Any one of these is enough. Names rarely show one; random text nearly
    always does (measured on 50,000 random bodies: 0.16% of 24-character
    alphanumeric ones show none, 0.13% of 34 letters, 0.004% of 36 alphanumeric
    (GitHub, npm), none of 99):

    * letters and digits alternate 4+ times ("x9Kq2m7"; "migration-plan-v2":
      once), which catches single-case random text (hex, base32);
    * over a third of the letters are in camel-case "words" of one or two
      letters ("xK", "q", "Pz"; "MyProjectPlan": two of 13);
    * three lower-case letters each alone between capitals ("AbCdEfG");
    * five consonants in a row that are not an acronym ("Qxvbn"; "HTTPS" is);
    * 40-85% of the letters are capitals ("UDLKIspIyyEV"; a camel-case name
      has one per word, a constant all).
    """
    value = value[:_RANDOM_SAMPLE]
    if len(_LETTER_DIGIT.findall(value)) >= 4:
        return True
    letters = short = upper = 0
    for word in _CAMEL_WORDS.findall(value):
        letters += len(word)
        upper += len(word) if word.isupper() else word[0].isupper()
        if len(word) <= 2:
            short += len(word)
    if letters >= 4 and 20 * short >= 7 * letters:
        return True
    if letters >= 8 and 0.4 * letters <= upper <= 0.85 * letters:
        return True
    if len(_LONE_LOWER.findall(value)) >= 3:
        return True
    return any(not run[1:].isupper() for run in _CONSONANTS.findall(value))


def _accept_glued(text: str, found: list[Finding], glued: list[Finding]) -> None:
    """Add the glued findings that follow a name, not random data.

    Inside base64url data (Fernet blobs, signatures) a prefix such as "ghs_"
    or "sk-proj-" turns up now and then glued to random characters, so the
    name before a glued token must not look random itself. That name ends
    where a token found before it ends (tokens glued to each other: the one
    before becomes a placeholder), so the glued findings are taken in order.
    """
    ends = [f.end for f in found]  # a heap of the ends not passed yet
    heapq.heapify(ends)
    last_end = 0  # the last end at or before the glued finding's start
    for f in sorted(glued):
        while ends and ends[0] <= f.start:
            last_end = max(last_end, heapq.heappop(ends))
        floor = max(last_end, f.start - _GLUE_LOOKBACK)
        s = f.start
        while s > floor and text[s - 1] in _NAME_CHARS:
            s -= 1
        name = text[s : f.start]
        if len(name) >= _MIN_RANDOM_NAME and looks_random(name):
            continue
        found.append(f)
        heapq.heappush(ends, f.end)


# ------------------------------------------------------------------- private keys

_PEM_BEGIN: Final = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END: Final = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A key cut short (``head`` of a key file, a truncated tool result): base64 lines
# and PEM headers after the BEGIN line, with real or JSON-escaped line breaks.
_PEM_TRUNCATED_BODY: Final = re.compile(
    r"(?:(?:\r?\n|\\{1,3}[rn])+(?:[A-Za-z0-9+/=]+|(?:Proc-Type|DEK-Info|Comment): [^\r\n\\]*))+"
)
_PEM_NOISE: Final = re.compile(r"\\{1,3}[rnt]|\s|[A-Za-z-]+: [^\r\n\\]*")
_PEM_MAX_BODY: Final = 64 * 1024


def _looks_like_key_body(body: str) -> bool:
    """Mostly base64: tells a real key from code/prose that mentions the markers."""
    material = _PEM_NOISE.sub("", body)
    if len(material) < 16:
        return False
    b64 = sum(1 for c in material if c in _B64_CHARS)
    return b64 / len(material) >= 0.85


def _find_private_keys(text: str, found: list[Finding]) -> None:
    pos = 0
    end: re.Match[str] | None = None
    searched = False
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        # The next END marker is searched once and shared by every BEGIN before
        # it, so many BEGINs without an END do not rescan the text each time.
        if not searched or (end is not None and end.start() < begin.end()):
            end = _PEM_END.search(text, begin.end())
            searched = True
        if end is not None and end.start() - begin.end() <= _PEM_MAX_BODY:
            # A later BEGIN before this END owns it; this one may be truncated.
            later = _PEM_BEGIN.search(text, begin.end(), end.start())
            if later is None and _looks_like_key_body(text[begin.end() : end.start()]):
                found.append(Finding(begin.start(), end.end(), PRIVATE_KEY))
                pos = end.end()
                continue
        body = _PEM_TRUNCATED_BODY.match(text, begin.end())
        if body is not None and _looks_like_key_body(body[0]):
            found.append(Finding(begin.start(), body.end(), PRIVATE_KEY))
            pos = body.end()
            continue
        pos = begin.end()


# ------------------------------------------------------------------ URL passwords

# Starts at the literal "://" (fast search); the scheme is checked by hand. The
# password may itself contain "@" (greedy, backs off to the last "@" before the
# host) but never "/", "?", "#", whitespace, quotes or a backslash, so it cannot
# run past the authority part of the URL or out of a JSON string.
_URL_RE: Final = re.compile(
    r"://(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<hook>[A-Za-z0-9_/-]{16,255})"
    r"|(?P<user>[^\s:@/?#\"'`\\<>\[\]{}]{0,128}):(?P<pw>[^\s/?#\"'`\\<>]{1,256})@(?=[A-Za-z0-9\[_.-]))"
)


def _find_urls(text: str, found: list[Finding]) -> None:
    for m in _matches(_URL_RE, text):
        if m.start() == 0 or not text[m.start() - 1].isalnum():
            continue
        hook = m["hook"]
        if hook is not None:
            if any(c.isdigit() for c in hook) and not is_placeholder(hook):
                found.append(Finding(m.start("hook"), m.end("hook"), SLACK_WEBHOOK))
            continue
        pw, user = m["pw"], m["user"]
        if is_placeholder(pw) or pw.lower() == user.lower():
            continue
        found.append(Finding(m.start("pw"), m.end("pw"), URL_PASSWORD))


# ---------------------------------------------------------------- name = value

# Kinds of secret-looking names.
_K_PASSWORD: Final = 1  # any literal value is a secret
_K_TOKEN: Final = 2  # a literal that does not read as words
_K_AWS: Final = 3  # 40-char AWS secret; otherwise treated like _K_TOKEN
_K_WEAK: Final = 4  # only high-entropy values

_PASSWORD_WORDS: Final = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "pw"})
_TOKEN_WORDS: Final = frozenset({"secret", "token", "apikey", "secretkey", "authorization"})
_WEAK_WORDS: Final = frozenset(
    {
        "key",
        "secret",
        "token",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "apikey",
        "auth",
        "credential",
        "credentials",
        "creds",
    }
)
# Names ending like this describe a secret (its type, length, location...) but
# never hold one.
_DESCRIPTIVE_SUFFIXES: Final = _words(
    """
    type kind name names id ids url uri urls endpoint host path paths file files dir
    count counts length len size max min limit limits expiry expires expiration ttl
    at hash policy policies prompt field fields label env var header headers format mode
    usage tokens enabled required provider providers source ref arn version regex
    pattern budget timeout timestamp index idx prefix suffix schema spec exists rule
    rules reset manager store service flow method methods strategy scheme level
    usages hint hints help message error errors status state config option options
    """
)

_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT: Final = re.compile(r"[^a-z0-9]+")


def _segments(name: str) -> list[str]:
    return [s for s in _SPLIT.split(_CAMEL.sub("_", name).lower()) if s]


@functools.lru_cache(maxsize=4096)
def _descriptive_tail(tail: str) -> bool:
    segs = _segments(tail)
    return not segs or segs[-1] in _DESCRIPTIVE_SUFFIXES


@functools.lru_cache(maxsize=4096)
def name_kind(name: str) -> int | None:
    """How secret-looking an identifier is (one of the ``_K_*`` kinds) or None."""
    segs = _segments(name)
    if not segs:
        return None
    last = segs[-1]
    if last in _DESCRIPTIVE_SUFFIXES:
        return None
    joined = "".join(segs)
    if "secret" in joined and ("aws" in segs or "access" in segs):
        return _K_AWS
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd")):
        return _K_PASSWORD
    if (
        last in _TOKEN_WORDS
        or last.endswith(("secret", "token", "apikey"))
        or (last == "key" and len(segs) > 1 and segs[-2] in ("api", "secret"))
    ):
        return _K_TOKEN
    if any(s in _WEAK_WORDS or s.endswith(("key", "secret", "token")) for s in segs):
        return _K_WEAK
    return None


_IDENT_CHARS: Final = _TOKEN_CHARS | {"."}
# What can follow a name in an assignment: a closing quote (maybe JSON-escaped),
# a separator, or the blank before a separator or a flag's value. Anything else
# -- including more name characters, when the name is longer than _MAX_NAME --
# ends the look at this keyword at once.
_AFTER_NAME: Final = frozenset({'"', "'", "\\", ":", "=", " ", "\t"})
_MAX_NAME: Final = 96
_IDENT_TAIL: Final = re.compile(rf"[A-Za-z0-9_.-]{{0,{_MAX_NAME}}}")

# After the name: optional closing quote of a quoted key, a separator, then the
# value. Quoted values never contain the quote or a newline; JSON-escaped quotes
# (\") delimit values inside JSON strings; unquoted values stop at whitespace,
# quotes and code punctuation. Inside raw JSON a value runs on through escapes of
# ordinary characters (\u00e9, \\, \/) -- stopping there would leak the rest of
# the secret -- but stops at escaped whitespace (\n, \t) and escaped quotes. None
# of the forms can run across a JSON string boundary.
_ASSIGN_RE: Final = re.compile(
    r"""
    (?P<kq>\\?["'])?
    (?P<sp1>[ \t]*)
    (?P<sep>:=|=>|=(?!=)|:(?!:))
    (?P<sp2>[ \t]*)
    (?P<scheme>(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|[Dd]igest|[Bb]ot)[ \t]+)?
    (?:
        \\"(?P<v1>[^"\\\n]{0,4096})\\"
      | (?:[rbuRBU]{1,2})?"(?P<v2>(?:[^"\\\n]|\\[^\n]){0,4096})"
      | '(?P<v3>(?:[^'\\\n"]|\\u[0-9a-fA-F]{4}|\\[\\/]){0,4096})'
      | `(?P<v4>(?:[^`\\\n"]|\\u[0-9a-fA-F]{4}|\\[\\/]){0,4096})`
      | (?P<v5>(?:[^\s"'`\\,;&|<>(){}\[\]]|\\u[0-9a-fA-F]{4}|\\[\\/]){1,1024})
    )
    """,
    re.VERBOSE,
)
# ``--password hunter2``: a command-line flag followed by its value.
_FLAG_VALUE_RE: Final = re.compile(
    r"""[ \t]+(?:"(?P<v2>[^"\\\n]{0,4096})"|'(?P<v3>[^'\\\n"]{0,4096})'"""
    r"""|(?P<v5>[^\s"'`\\,;&|<>(){}\[\]-][^\s"'`\\,;&|<>(){}\[\]]{0,1023}))"""
)
_AUTH_SCHEME_IN_QUOTES: Final = re.compile(
    r"(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|[Dd]igest|[Bb]ot)[ \t]+"
)
_CODE_REF: Final = re.compile(r"[A-Za-z_$@][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
_URL_PREFIX: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_PATH: Final = re.compile(r"(?:~|\.{1,2})?/[\w.@%~-]*(?:/[\w.@%~-]*)*")
_DIRECTORY: Final = re.compile(r"\.?[a-z][a-z_.-]+|[A-Z][a-z]+")


def _is_path_or_url(value: str) -> bool:
    if _URL_PREFIX.match(value):
        return True
    if _PATH.fullmatch(value) is None or value.startswith("//"):
        return False
    # Base64 secrets may start with "/" too; a path's first directory is a word
    # ("/home/...", "/tmp/tmp.x8Fk2", "~/.ssh/...", "./build/...").
    first = next((seg for seg in value.split("/")[1:] if seg), "")
    return is_wordy(value) or _DIRECTORY.fullmatch(first) is not None


_ENV_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*")
_B64ISH: Final = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_WS: Final = re.compile(r"\s")
_AWS_SECRET_VALUE: Final = re.compile(r"[A-Za-z0-9/+]{40}")


def classify_value(
    kind: int, value: str, *, quoted: bool = True, env_style: bool = False
) -> str | None:
    """The category of ``value`` assigned to a name of ``kind``, or None if benign."""
    if kind == _K_AWS:
        if _AWS_SECRET_VALUE.fullmatch(value) and not is_placeholder(value):
            return AWS_SECRET_KEY
        kind = _K_TOKEN
    if len(value) < 4 or _WS.search(value) or is_placeholder(value):
        return None
    if value[0] in "{}[]" or _is_path_or_url(value):
        return None
    if (
        not quoted
        and _CODE_REF.fullmatch(value)
        and not (env_style and kind == _K_PASSWORD)
        and not (kind == _K_PASSWORD and _literal_word(value))
    ):
        return None
    if kind == _K_PASSWORD:
        return PASSWORD_ASSIGNMENT
    if kind == _K_TOKEN:
        return None if len(value) < 8 or is_wordy(value) else PASSWORD_ASSIGNMENT
    # _K_WEAK: only values that look machine-generated.
    if len(value) < MIN_ENTROPY_LENGTH or not _B64ISH.fullmatch(value):
        return None
    if _HEX.fullmatch(value) or _UUID.search(value) or is_wordy(value):
        return None
    if shannon_entropy(value) < ENTROPY_THRESHOLD:
        return None
    return HIGH_ENTROPY_SECRET


# Lower-case words that, after "password=", are far likelier a variable than a
# password: the argument passed on, a field of a form or settings object.
_CODE_WORDS: Final = _words(
    """
    request response params kwargs options config settings environ values value default
    optional required string unicode hashed hashing encrypted plaintext cleartext prompt
    input inputs bytes random generated getenv credential credentials cipher digest none
    self args data form field user username login secrets getpass masked hidden
    """
)
_STEMS: Final = ("pass", "pwd", "secret", "token", "key", "word", "cred", "auth")


def _literal_word(value: str) -> bool:
    """Whether an unquoted lower-case word assigned to a password name is a literal.

    ``password=hunterabc`` in a shell line, a config file or prose is a
    password made of letters only; ``password=password`` or ``password=pw``
    is code. A word of six or more lower-case letters that is not a common
    variable name and contains no word naming the secret itself counts.
    """
    return (
        len(value) >= 6
        and value.isalpha()
        and value.islower()
        and value not in _CODE_WORDS
        and not any(stem in value for stem in _STEMS)
    )


def _name_start(text: str, i: int) -> int:
    """Start of the identifier that contains position ``i``."""
    s = i
    floor = max(0, i - _MAX_NAME)
    while s > floor and text[s - 1] in _IDENT_CHARS:
        s -= 1
    # "\nPASSWORD=" inside a JSON string: the "n" belongs to the escape.
    if s >= 1 and text[s - 1] == "\\" and s < i and text[s] in "ntr":
        s += 1
    return s


def _find_assignments(text: str, found: list[Finding], hits: list[int]) -> None:
    """Assignments to secret-looking names; ``hits`` are ``keyword_hits(text)``."""
    seen: set[int] = set()
    covered = 0
    for i in hits:
        # A keyword inside a value just found to be a secret ("password=token=x")
        # is part of that secret; skipping it keeps repeated keywords linear.
        # Inside a rejected value ('note: "export PASSWORD=x"') it is looked at.
        if i < covered:
            continue
        result = _assignment_at(text, i, seen)
        if result is not None:
            end, finding = result
            if finding is not None:
                covered = end
                found.append(finding)


def _assignment_at(text: str, i: int, seen: set[int]) -> tuple[int, Finding | None] | None:
    """``(end of the parsed value, finding or None)``, or None if no assignment."""
    tail = _IDENT_TAIL.match(text, i)
    name_end = tail.end() if tail is not None else i
    if name_end in seen or text[name_end : name_end + 1] not in _AFTER_NAME:
        return None  # already done, or not followed by anything an assignment starts with
    seen.add(name_end)
    # Cheap early exit for the commonest hits ("input_tokens", "token_count"):
    # the name's last segment is the tail's, whatever precedes the keyword.
    if _descriptive_tail(text[i:name_end]):
        return None
    name_start = _name_start(text, i)
    name = text[name_start:name_end].rstrip(".-")
    if len(name) != name_end - name_start:
        return None  # "the password." -- a sentence, not an assignment
    kind = name_kind(name)
    if kind is None or text[max(0, name_start - 3) : name_start] == "://":
        return None  # not secret-looking, or the user name of a URL (see _find_urls)
    m = _ASSIGN_RE.match(text, name_end)
    flag = None
    if m is None:
        if not name.startswith("-"):
            return None
        flag = _FLAG_VALUE_RE.match(text, name_end)
        if flag is None:
            return None
    am = m if m is not None else flag
    assert am is not None
    group = am.lastgroup
    if group is None or not group.startswith("v"):
        return None
    vstart, vend = am.span(group)
    parsed_end = am.end()
    value = text[vstart:vend]
    quoted = group != "v5"
    before = text[name_start - 1] if name_start > 0 else ""
    if m is not None and m["kq"] is None and quoted:
        # `"password=" + pw`: the name sits inside a string literal, so the
        # quote after "=" closes that literal instead of opening a value.
        if group == "v1" and text[max(0, name_start - 2) : name_start] == '\\"':
            return parsed_end, None
        if group in ("v2", "v3", "v4") and before == text[vstart - 1]:
            return parsed_end, None
    if quoted:
        scheme = _AUTH_SCHEME_IN_QUOTES.match(value)
        if scheme is not None:
            vstart += scheme.end()
            value = value[scheme.end() :]
    else:
        stripped = value.rstrip(".:")
        vend -= len(value) - len(stripped)
        value = stripped
        if vend < len(text) and text[vend] in "([":
            return parsed_end, None  # get_token(...), os.environ[...]
    env_style = (
        m is not None
        and not quoted
        and m["sep"] == "="
        and not m["sp1"]
        and not m["sp2"]
        and _ENV_NAME.fullmatch(name) is not None
    )
    category = classify_value(kind, value, quoted=quoted, env_style=env_style)
    if category is None:
        return parsed_end, None
    return parsed_end, Finding(vstart, vend, category)


#: A placeholder this redactor wrote: only real categories count, so that
#: "[REDACTED:ghp_...]" does not shield the token inside it.
PLACEHOLDER_RE: Final = re.compile(
    r"\[REDACTED:(?:" + "|".join(CATEGORIES) + r"|user:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})\]"
)


def find_named_value(name: str, value: str) -> Finding | None:
    """The secret in a string ``value`` stored under key ``name`` (structured data).

    ``{"password": "..."}`` decoded from JSON has no ``password=`` left in the
    text, so the key is judged here; an auth scheme prefix ("Bearer ") is kept.
    A placeholder in the key names the secret that was there, not the field:
    read as a name, "[REDACTED:openai_api_key]" would make the value look
    assigned to an API key the second time a document is redacted.
    """
    if PLACEHOLDER_PREFIX in name:
        name = PLACEHOLDER_RE.sub(" ", name)
    kind = name_kind(name)
    if kind is None:
        return None
    scheme = _AUTH_SCHEME_IN_QUOTES.match(value)
    start = scheme.end() if scheme is not None else 0
    category = classify_value(kind, value[start:], quoted=True)
    return Finding(start, len(value), category) if category is not None else None


# ---------------------------------------------------------------------- entry point


#: The shortest text any built-in detector can fire on ("pwd=abcd", "a://:x@h").
_MIN_FINDING_CONTEXT: Final = 8

_ALL_ANCHORS: Final = frozenset(LITERAL_ANCHORS)
#: Off only in tests: every detector then runs on every text, the reference
#: the anchor gate is checked against.
ANCHOR_GATE = True


def find_builtin(text: str) -> list[Finding]:
    """Every built-in finding in ``text`` (possibly overlapping, unsorted).

    A detector runs only if ``text`` holds one of its anchors (or, for the
    name = value detector, a keyword, whose positions it starts from): two
    automaton passes decide that for all of them, so clean text costs two
    C-speed scans instead of one per detector.
    """
    found: list[Finding] = []
    if len(text) < _MIN_FINDING_CONTEXT:
        return found
    if not ANCHOR_GATE:
        _find_private_keys(text, found)
        _find_prefixed(text, found, _ALL_ANCHORS)
        _find_urls(text, found)
        _find_assignments(text, found, keyword_hits(text))
        return found
    data = text.encode("utf-8", "surrogatepass")
    present = anchors_in(data)
    hits = keyword_hits(text, data)
    if present:
        if "-----BEGIN" in present:
            _find_private_keys(text, found)
        _find_prefixed(text, found, present)
        if "://" in present:
            _find_urls(text, found)
    if hits:
        _find_assignments(text, found, hits)
    return found
