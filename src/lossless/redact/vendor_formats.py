"""Vendor token formats beyond the big ones in ``detectors``.

Most service tokens are a short vendor prefix, a separator and a long random
body: ``npm_<36>``, ``hf_<34>``, ``pypi-AgEIcHlwaS5vcmc<50+>``, ``SG.<22>.<43>``.
The shapes follow the public rule set of gitleaks (see docs/secret-detectors.md
for the rule-by-rule comparison); the regexes are written here.

Speed: one regex per format would cost one substring scan each (~40 of them).
Instead the formats are grouped by the separator that ends their prefix
(``_``, ``-``, ``.``): each group is one regex that starts at that literal,
first requires a long run of token characters after it (most separators in
code and prose are followed by a short word, so the attempt fails there at
once) and only then checks which prefix precedes it with fixed-width
look-behinds. Three scans cover nearly every format; a few prefixes without a
separator (``SK``, ``dapi``, ``ABSK``...) get their own literal-first regex.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple


class VendorFormat(NamedTuple):
    category: str
    prefix: str
    body: str


# Categories (each also listed in ``detectors.CATEGORIES``).
SLACK_TOKEN: Final = "slack_token"
GITLAB_TOKEN: Final = "gitlab_token"
STRIPE_KEY: Final = "stripe_key"
NPM_TOKEN: Final = "npm_token"
HUGGINGFACE_TOKEN: Final = "huggingface_token"
PYPI_TOKEN: Final = "pypi_token"
SENDGRID_API_KEY: Final = "sendgrid_api_key"
TWILIO_API_KEY: Final = "twilio_api_key"
SHOPIFY_TOKEN: Final = "shopify_token"
DIGITALOCEAN_TOKEN: Final = "digitalocean_token"
LINEAR_API_KEY: Final = "linear_api_key"
POSTMAN_API_KEY: Final = "postman_api_key"
AGE_SECRET_KEY: Final = "age_secret_key"
GROQ_API_KEY: Final = "groq_api_key"
XAI_API_KEY: Final = "xai_api_key"
PERPLEXITY_API_KEY: Final = "perplexity_api_key"
VAULT_TOKEN: Final = "vault_token"
SENTRY_TOKEN: Final = "sentry_token"
GRAFANA_TOKEN: Final = "grafana_token"
DATABRICKS_TOKEN: Final = "databricks_token"
DOPPLER_TOKEN: Final = "doppler_token"
PULUMI_TOKEN: Final = "pulumi_token"
FLYIO_TOKEN: Final = "flyio_token"
SQUARE_TOKEN: Final = "square_token"
HEROKU_API_KEY: Final = "heroku_api_key"
PLANETSCALE_TOKEN: Final = "planetscale_token"
NOTION_TOKEN: Final = "notion_token"
RUBYGEMS_TOKEN: Final = "rubygems_token"
PREFECT_TOKEN: Final = "prefect_token"
README_TOKEN: Final = "readme_token"
ONEPASSWORD_TOKEN: Final = "onepassword_token"
SHIPPO_TOKEN: Final = "shippo_token"
DUFFEL_TOKEN: Final = "duffel_token"
DYNATRACE_TOKEN: Final = "dynatrace_token"
EASYPOST_TOKEN: Final = "easypost_token"
INFRACOST_TOKEN: Final = "infracost_token"
GOOGLE_OAUTH_TOKEN: Final = "google_oauth_token"
OPENSHIFT_TOKEN: Final = "openshift_token"
ATLASSIAN_TOKEN: Final = "atlassian_token"
AWS_BEDROCK_KEY: Final = "aws_bedrock_key"
NEW_RELIC_KEY: Final = "new_relic_key"
CLOJARS_TOKEN: Final = "clojars_token"

#: In ``detectors.CATEGORIES`` order-independent: these are all "specific formats".
VENDOR_CATEGORIES: Final[tuple[str, ...]] = (
    NPM_TOKEN,
    HUGGINGFACE_TOKEN,
    PYPI_TOKEN,
    SENDGRID_API_KEY,
    TWILIO_API_KEY,
    SHOPIFY_TOKEN,
    DIGITALOCEAN_TOKEN,
    LINEAR_API_KEY,
    POSTMAN_API_KEY,
    AGE_SECRET_KEY,
    GROQ_API_KEY,
    XAI_API_KEY,
    PERPLEXITY_API_KEY,
    VAULT_TOKEN,
    SENTRY_TOKEN,
    GRAFANA_TOKEN,
    DATABRICKS_TOKEN,
    DOPPLER_TOKEN,
    PULUMI_TOKEN,
    FLYIO_TOKEN,
    SQUARE_TOKEN,
    HEROKU_API_KEY,
    PLANETSCALE_TOKEN,
    NOTION_TOKEN,
    RUBYGEMS_TOKEN,
    PREFECT_TOKEN,
    README_TOKEN,
    ONEPASSWORD_TOKEN,
    SHIPPO_TOKEN,
    DUFFEL_TOKEN,
    DYNATRACE_TOKEN,
    EASYPOST_TOKEN,
    INFRACOST_TOKEN,
    GOOGLE_OAUTH_TOKEN,
    OPENSHIFT_TOKEN,
    ATLASSIAN_TOKEN,
    AWS_BEDROCK_KEY,
    NEW_RELIC_KEY,
    CLOJARS_TOKEN,
)

_HEX32: Final = "[a-fA-F0-9]{32}"

# Prefix ending in "_".
_UNDERSCORE: Final = (
    VendorFormat(NPM_TOKEN, "npm_", "[A-Za-z0-9]{36}"),
    VendorFormat(HUGGINGFACE_TOKEN, "hf_", "[A-Za-z]{34}"),
    VendorFormat(HUGGINGFACE_TOKEN, "api_org_", "[A-Za-z]{34}"),
    VendorFormat(LINEAR_API_KEY, "lin_api_", "[A-Za-z0-9]{40}"),
    VendorFormat(GROQ_API_KEY, "gsk_", "[A-Za-z0-9]{52}"),
    VendorFormat(FLYIO_TOKEN, "fo1_", "[A-Za-z0-9_-]{43}"),
    VendorFormat(FLYIO_TOKEN, "fm2_", "[A-Za-z0-9+/]{100,4096}={0,3}"),
    VendorFormat(NOTION_TOKEN, "ntn_", "[0-9]{11}[A-Za-z0-9]{35}"),
    VendorFormat(PREFECT_TOKEN, "pnu_", "[A-Za-z0-9]{36}"),
    VendorFormat(README_TOKEN, "rdme_", "[a-z0-9]{70}"),
    VendorFormat(ONEPASSWORD_TOKEN, "ops_", "eyJ[A-Za-z0-9+/]{250,8192}={0,3}"),
    VendorFormat(SENTRY_TOKEN, "sntrys_", "eyJ[A-Za-z0-9+/=_]{40,1024}"),
    VendorFormat(SENTRY_TOKEN, "sntryu_", "[a-f0-9]{64}"),
    VendorFormat(SHOPIFY_TOKEN, "shpat_", _HEX32),
    VendorFormat(SHOPIFY_TOKEN, "shpca_", _HEX32),
    VendorFormat(SHOPIFY_TOKEN, "shppa_", _HEX32),
    VendorFormat(SHOPIFY_TOKEN, "shpss_", _HEX32),
    VendorFormat(PLANETSCALE_TOKEN, "pscale_tkn_", "[A-Za-z0-9_.=-]{32,64}"),
    VendorFormat(PLANETSCALE_TOKEN, "pscale_pw_", "[A-Za-z0-9_.=-]{32,64}"),
    VendorFormat(PLANETSCALE_TOKEN, "pscale_oauth_", "[A-Za-z0-9_.=-]{32,64}"),
    VendorFormat(RUBYGEMS_TOKEN, "rubygems_", "[a-f0-9]{48}"),
    VendorFormat(SHIPPO_TOKEN, "shippo_live_", "[a-fA-F0-9]{40}"),
    VendorFormat(SHIPPO_TOKEN, "shippo_test_", "[a-fA-F0-9]{40}"),
    VendorFormat(DUFFEL_TOKEN, "duffel_live_", "[A-Za-z0-9_=-]{43}"),
    VendorFormat(DUFFEL_TOKEN, "duffel_test_", "[A-Za-z0-9_=-]{43}"),
    VendorFormat(STRIPE_KEY, "whsec_", "[A-Za-z0-9]{32,128}"),
    VendorFormat(DIGITALOCEAN_TOKEN, "dop_v1_", "[a-f0-9]{64}"),
    VendorFormat(DIGITALOCEAN_TOKEN, "doo_v1_", "[a-f0-9]{64}"),
    VendorFormat(DIGITALOCEAN_TOKEN, "dor_v1_", "[a-f0-9]{64}"),
    VendorFormat(GRAFANA_TOKEN, "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    VendorFormat(GRAFANA_TOKEN, "glc_", "[A-Za-z0-9+/]{32,400}={0,3}"),
    VendorFormat(CLOJARS_TOKEN, "CLOJARS_", "[a-z0-9]{60}"),
)
# Prefix ending in "-".
_DASH: Final = (
    VendorFormat(SLACK_TOKEN, "xapp-", r"\d-[A-Za-z0-9]{6,32}-\d{6,32}-[A-Za-z0-9]{16,128}"),
    VendorFormat(PYPI_TOKEN, "pypi-", "AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1000}"),
    VendorFormat(POSTMAN_API_KEY, "PMAK-", "[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    VendorFormat(AGE_SECRET_KEY, "AGE-SECRET-KEY-", "1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    VendorFormat(XAI_API_KEY, "xai-", "[A-Za-z0-9]{80}"),
    VendorFormat(PERPLEXITY_API_KEY, "pplx-", "[A-Za-z0-9]{48}"),
    VendorFormat(PULUMI_TOKEN, "pul-", "[a-f0-9]{40}"),
    VendorFormat(SQUARE_TOKEN, "sq0atp-", "[A-Za-z0-9_-]{22,60}"),
    VendorFormat(SQUARE_TOKEN, "sq0csp-", "[A-Za-z0-9_-]{22,60}"),
    VendorFormat(HEROKU_API_KEY, "HRKU-", "AA[A-Za-z0-9_-]{58}"),
    VendorFormat(INFRACOST_TOKEN, "ico-", "[A-Za-z0-9]{32}"),
    VendorFormat(GOOGLE_OAUTH_TOKEN, "GOCSPX-", "[A-Za-z0-9_-]{28}"),
    VendorFormat(NEW_RELIC_KEY, "NRAK-", "[A-Z0-9]{27}"),
    # GitLab's other token kinds (glpat- is in detectors).
    VendorFormat(GITLAB_TOKEN, "glptt-", "[0-9a-f]{40}"),
    VendorFormat(GITLAB_TOKEN, "gldt-", "[A-Za-z0-9_-]{20,64}"),
    VendorFormat(GITLAB_TOKEN, "glrt-", "[A-Za-z0-9_.-]{20,300}"),
    VendorFormat(GITLAB_TOKEN, "glsoat-", "[A-Za-z0-9_-]{20,64}"),
    VendorFormat(GITLAB_TOKEN, "glffct-", "[A-Za-z0-9_-]{20,64}"),
    VendorFormat(GITLAB_TOKEN, "glft-", "[A-Za-z0-9_-]{20,64}"),
    VendorFormat(GITLAB_TOKEN, "glimt-", "[A-Za-z0-9_-]{25,64}"),
    VendorFormat(GITLAB_TOKEN, "glagent-", "[A-Za-z0-9_-]{50,64}"),
    VendorFormat(GITLAB_TOKEN, "gloas-", "[A-Za-z0-9_-]{64}"),
    VendorFormat(GITLAB_TOKEN, "glcbt-", "[A-Za-z0-9]{1,5}_[A-Za-z0-9_-]{20,64}"),
)
# Prefix ending in ".".
_DOT: Final = (
    VendorFormat(SENDGRID_API_KEY, "SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    VendorFormat(VAULT_TOKEN, "hvs.", "[A-Za-z0-9_-]{90,120}"),
    VendorFormat(VAULT_TOKEN, "hvb.", "[A-Za-z0-9_-]{138,300}"),
    VendorFormat(DOPPLER_TOKEN, "dp.pt.", "[A-Za-z0-9]{43}"),
    VendorFormat(DOPPLER_TOKEN, "dp.st.", "[A-Za-z0-9_.-]{40,90}"),
    VendorFormat(DOPPLER_TOKEN, "dp.sa.", "[A-Za-z0-9]{40,90}"),
    VendorFormat(DOPPLER_TOKEN, "dp.ct.", "[A-Za-z0-9]{40,90}"),
    VendorFormat(GOOGLE_OAUTH_TOKEN, "ya29.", "[A-Za-z0-9_-]{20,2048}"),
    VendorFormat(DYNATRACE_TOKEN, "dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
)
# No separator: each its own literal-first regex.
_LITERAL: Final = (
    VendorFormat(TWILIO_API_KEY, "SK", "[0-9a-fA-F]{32}"),
    VendorFormat(DATABRICKS_TOKEN, "dapi", r"[a-f0-9]{32}(?:-\d)?"),
    VendorFormat(EASYPOST_TOKEN, "EZ", "[AT]K[A-Za-z0-9]{54}"),
    VendorFormat(ATLASSIAN_TOKEN, "ATATT3", "[A-Za-z0-9_=-]{150,250}"),
    VendorFormat(AWS_BEDROCK_KEY, "ABSK", "[A-Za-z0-9+/]{109,269}={0,2}"),
    VendorFormat(OPENSHIFT_TOKEN, "sha256~", "[A-Za-z0-9_-]{43}"),
)

#: Every format, for docs and tests.
VENDOR_FORMATS: Final = (*_UNDERSCORE, *_DASH, *_DOT, *_LITERAL)

#: Prefixes that must not follow a token character: the tail of common words
#: or of base64 data ("TASK" + hex holds "SK", "LOPEZ" "EZ", "rapidapi"
#: "dapi", "MSG." "SG.", "mexico-" "ico-", "ABSK" turns up inside base64 blobs,
#: "pul-" comes before a git id). The others are long or punctuated enough to
#: be found glued to a name as well ("NPM_TOKEN_npm_...", "keyglpat-..."), where
#: ``detectors`` checks the body and the name before it further.
BOUNDED_PREFIXES: Final = frozenset({"SK", "EZ", "dapi", "ABSK", "pul-", "ico-", "SG."})
#: Prefixes that end words or names ("pnpm_", "kotlin_api_", "get_api_org_"):
#: glued, their body must also look random (``detectors.looks_random``).
WORD_TAIL_PREFIXES: Final = frozenset({"npm_", "api_org_", "lin_api_"})

#: The prefixes of the big formats in ``detectors`` that are found glued.
BIG_GLUED_PREFIXES: Final = (
    *("AKIA", "ASIA", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-"),
    *("sk-ant-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk_live_", "rk_live_", "xox"),
    *("sk_test_", "rk_test_"),
)


def _trie(words: list[str]) -> str:
    """A regex matching any of ``words``, branching one character at a time,
    so that a failed try costs a character comparison or two, not one per
    word (``re`` tries the alternatives of a group in turn)."""
    if "" in words:
        rest = [w for w in words if w]
        return f"(?:{_trie(rest)})?" if rest else ""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    branches = [re.escape(c) + _trie(tails) for c, tails in sorted(heads.items())]
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


def _next_token() -> str:
    prefixes = {*BIG_GLUED_PREFIXES, *(f.prefix for f in VENDOR_FORMATS)} - BOUNDED_PREFIXES
    # No prefix is the start of another, so the optional tails never apply.
    return _trie(sorted(prefixes))


#: Where a token may end although a token character follows: at the prefix of
#: a format found glued. Tokens glued to each other ("ghp_...ghp_...") are
#: then found in one scan, each ending where the next begins (the next is
#: glued to a token found, not to random data: see ``detectors``). Without it,
#: each scan would only find the last one of a chain.
NEXT_TOKEN: Final = _next_token()

# A token character may not follow the body (unless a glued token starts
# there), nor precede a bounded prefix.
_LEFT: Final = "[A-Za-z0-9_-]"
_RIGHT: Final = rf"(?:(?![A-Za-z0-9_-])|(?={NEXT_TOKEN}))"


def _left(f: VendorFormat) -> str:
    lit = re.escape(f.prefix)
    return f"(?<!{_LEFT}{lit})" if f.prefix in BOUNDED_PREFIXES else ""


def _group(separator: str, formats: tuple[VendorFormat, ...]) -> re.Pattern[str]:
    alternatives = []
    for i, f in enumerate(formats):
        lit = re.escape(f.prefix)
        alternatives.append(f"(?<={lit}){_left(f)}(?P<f{i}>{f.body})")
    # A cheap first filter: the two characters before the separator end some
    # prefix (most separators in code follow other letters); then every body
    # here is at least 20 characters long.
    ends = sorted({re.escape(f.prefix[-3:-1]) for f in formats})
    return re.compile(
        re.escape(separator)
        + "(?<=(?:"
        + "|".join(ends)
        + ")"
        + re.escape(separator)
        + ")"
        + r"(?=[A-Za-z0-9+/=_.~-]{20})(?:"
        + "|".join(alternatives)
        + ")"
        + _RIGHT
    )


def _literal(f: VendorFormat) -> re.Pattern[str]:
    return re.compile(f"{re.escape(f.prefix)}{_left(f)}(?P<f0>{f.body}){_RIGHT}")


_REGEXES: Final[tuple[tuple[re.Pattern[str], tuple[VendorFormat, ...]], ...]] = (
    (_group("_", _UNDERSCORE), _UNDERSCORE),
    (_group("-", _DASH), _DASH),
    (_group(".", _DOT), _DOT),
    *((_literal(f), (f,)) for f in _LITERAL),
)
# The prefixes of each regex's formats: it can only match where one occurs.
_PREFIXES: Final = tuple(frozenset(f.prefix for f in formats) for _, formats in _REGEXES)


class VendorMatch(NamedTuple):
    start: int
    end: int
    category: str
    body: str
    prefix: str


def find_vendor_tokens(text: str, present: frozenset[str] | None = None) -> list[VendorMatch]:
    """Every vendor-format token in ``text`` (the prefix is part of the span).

    ``present``: the prefixes known to occur in ``text`` (None: unknown); a
    regex none of whose prefixes occurs is skipped.
    """
    found: list[VendorMatch] = []
    for (regex, formats), prefixes in zip(_REGEXES, _PREFIXES, strict=True):
        if present is not None and not present & prefixes:
            continue
        for m in regex.finditer(text):
            group = m.lastgroup
            assert group is not None
            f = formats[int(group[1:])]
            body_start, end = m.span(group)
            found.append(
                VendorMatch(body_start - len(f.prefix), end, f.category, m[group], f.prefix)
            )
    return found
