"""Prompt-injection detection for text that is handed back to a model.

Summaries, large-file exploration summaries, recalled memories, checkpoint text
and the SessionStart DAG view all re-enter an agent's context with more
authority than the tool output they came from. Every one of those paths asks
this module the same question: does this text *address the agent* (override or
forget its instructions, forge a role or system marker, forge a tool call or
result, ask it to run something destructive or to send data away, change its
goal, or speak to "the AI reading this")? Talking *about* such things in the
third person is not flagged, and neither are the imperatives of ordinary
documentation ("run `pytest -q` before committing").

Detection runs on several views of the text, so the usual disguises do not
hide a payload: Unicode compatibility forms and zero-width or bidi characters
are removed, Cyrillic/Greek homoglyphs and leetspeak are folded to Latin,
letter-spaced words are joined, HTML entities are decoded, and base64, hex,
percent-encoded and ROT13 renderings are decoded and scanned as well.

``scan`` lists what was found; ``neutralize`` replaces the flagged lines of a
text with a neutral note (a finding that only appears when two neighbouring
lines are read together, a payload split across messages, withholds both).
``escape_markup`` is the other half of the defence: whatever is kept, no tag in
it can open or close an element of the prompt it is placed in.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import unquote

from lossless.regex_literals import LiteralGate

__all__ = [
    "WITHHELD_NOTE",
    "Finding",
    "Neutralized",
    "continues",
    "display_line",
    "escape_markup",
    "fold",
    "hidden_texts",
    "inert_line",
    "is_injection",
    "joined",
    "neutralize",
    "scan",
]

WITHHELD_NOTE = "[instruction-like text withheld]"


@dataclass(frozen=True, slots=True)
class Finding:
    """One instruction-like passage: its kind and the (normalized) words that matched."""

    kind: str
    excerpt: str
    view: str = "text"


@dataclass(frozen=True, slots=True)
class Neutralized:
    text: str
    withheld: int
    kinds: tuple[str, ...] = ()


# -- normalization ----------------------------------------------------------------

_INVISIBLE_RE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
# Latin look-alikes from Cyrillic, Greek and a few symbol blocks (the letters
# an attacker swaps in so "ignоre" no longer matches "ignore").
_INTERLEAVED_RE = re.compile(r"[^\W\d_][\u200b\u200c\u2060\ufeff]+(?=[^\W\d_])")
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
        "ј": "j", "ԁ": "d", "ɡ": "g", "ո": "n", "ս": "u", "ԛ": "q", "ԝ": "w", "һ": "h",
        "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p",
        "С": "c", "Т": "t", "У": "y", "Х": "x", "І": "i", "Ј": "j", "Ѕ": "s",
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
        "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w", "Α": "a", "Β": "b", "Ε": "e",
        "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y",
        "Χ": "x", "Ζ": "z", "Η": "h", "ı": "i", "ł": "l", "ø": "o", "ß": "ss",
    }
)  # fmt: skip
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"}
)
_SEPARATED_RE = re.compile(r"(?<=[a-z])[-_.*~`|+/\\]+(?=[a-z])")
_SPACED_RE = re.compile(r"\b(?:[a-z] ){3,}[a-z]\b")


def _base(text: str) -> str:
    # ASCII text has no compatibility forms or invisible characters to undo.
    if not text.isascii():
        text = _INVISIBLE_RE.sub("", unicodedata.normalize("NFKC", text))
    if "&" in text:
        text = html.unescape(text)
    return re.sub(r"[^\S\n]+", " ", text).casefold()


def _folded(base: str) -> str:
    if base.isascii():  # no homoglyphs, no accents: the common case, kept cheap
        text = base.translate(_LEET)
    else:
        text = unicodedata.normalize("NFKD", base.translate(_CONFUSABLES))
        text = "".join(ch for ch in text if not unicodedata.combining(ch)).translate(_LEET)
    text = _SEPARATED_RE.sub(" ", text)
    return _SPACED_RE.sub(lambda m: m.group(0).replace(" ", ""), text)


def fold(text: str) -> str:
    """``text`` as the detector reads it: compatibility forms, invisible
    characters, homoglyphs, leetspeak and letter spacing undone, casefolded."""
    return _folded(_base(text))


_B64_RE = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_HEX_RE = re.compile(r"\b(?:[0-9a-fA-F]{2}[\s:]?){12,}\b")
_PERCENT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
# "rot13", "base64" or "decode" near a blob: the text says it is encoded.
_CIPHER_HINT_RE = re.compile(r"rot-?13|caesar|cipher|encoded|decode", re.I)


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    good = sum(ch.isprintable() or ch in "\n\t" for ch in text)
    letters = sum(ch.isalpha() for ch in text)
    return text if good / len(text) > 0.95 and letters / len(text) > 0.5 else None


def hidden_texts(text: str) -> list[str]:
    """Readable text hidden in base64, hex or percent-encoding inside ``text``."""
    return _decoded(text)


def _decoded(text: str) -> list[str]:
    """Text hidden in base64, hex or percent-encoding inside ``text``."""
    found: list[str] = []
    for match in _B64_RE.finditer(text):
        plain = _b64_plain(match.group(0))
        if plain is not None:
            found.append(plain)
    found.extend(_hex_plain(text))
    found.extend(_percent_plain(text))
    return found


@functools.lru_cache(maxsize=4096)
def _b64_plain(blob: str) -> str | None:
    """The readable text a base64 run decodes to, if any (runs repeat: cached)."""
    if blob.isalpha() and (blob.islower() or blob.isupper()):
        return None  # a long word or identifier, not base64
    padded = blob + "=" * (-len(blob) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decode(padded)
        except (binascii.Error, ValueError):
            continue
        plain = _printable(raw)
        if plain is not None:
            return plain
    return None


def _hex_plain(text: str) -> list[str]:
    found: list[str] = []
    for match in _HEX_RE.finditer(text):
        digits = re.sub(r"[\s:]", "", match.group(0))
        if len(digits) % 2 == 0:
            plain = _printable(bytes.fromhex(digits))
            if plain is not None:
                found.append(plain)
    return found


def _percent_plain(text: str) -> list[str]:
    if "%" not in text:
        return []
    return [unquote(token) for token in text.split() if len(_PERCENT_RE.findall(token)) >= 3]


# -- patterns -------------------------------------------------------------------------

_OVERRIDE_VERB = (
    r"(?:ignore|ignoring|disregard|forget|override|overrule|bypass|discard|abandon|neglect|"
    r"set aside|put aside|pay no (?:attention|heed) to|do not (?:follow|obey)|don'?t (?:follow|obey)|"
    r"stop (?:following|obeying)|no longer (?:follow|obey)|nullify|supersede|throw out|scrap)"
)
_SCOPE = (
    r"(?:all|any|every|each|the|your|my|our|these|those|previous|previously|prior|above|earlier|"
    r"preceding|foregoing|original|initial|existing|old|current|system|developer|safety|default|"
    r"given|other|of|before|that|this|first|entire|whole|standing|built-in|programmed|set of)"
)
_OBJECT = (
    r"(?:instructions?|instructs?|prompts?|system prompt|rules|directions|directives?|guidelines?|guidance|"
    r"guardrails?|safeguards?|programming|training|constraints|restrictions|polic(?:y|ies)|"
    r"commands you (?:were|have been) given|orders)"
)
_AI = (
    r"(?:ai|a\.i\.|llm|llms|language models?|ai (?:assistant|agent|model|system|helper|tool)s?|assistants?|"
    r"agents?|chat ?bots?|bots?|claude|chatgpt|gpt(?:-?\d\w*)?|codex|copilot|gemini|summari[sz]ers?|"
    r"(?:the |this )?model)"
)
_IMPERATIVE_LEAD = (
    r"(?:^|[.!?:;>\-*\n(\"'`]\s*|\b(?:please|now|then|first|also|and|immediately|must|should|"
    r"need to|have to|required to|will|shall|make sure to|be sure to|remember to|go ahead and|"
    r"you are to|proceed to|instructed to|asked to|want you to|i need you to)\s+)"
)
_RUN = r"(?:run|execute|exec|invoke|call|type|paste|launch|eval|evaluate|perform|issue)"
_DESTRUCTIVE = (
    r"(?:\brm\s+-[a-z]*(?:rf|fr|r\s+-f|f\s+-r)[a-z]*\s+(?:--no-preserve-root\s+)?"
    r"(?:/\*?(?=[\s\"';&|)]|$)|~/?\*?(?=[\s\"';&|)]|$)|\*(?=\s|$)|\$\{?home\}?/?(?=\s|$)|\.\.?(?=\s|$)|\.\./"
    r"|/(?:etc|usr|home|var|root|bin|boot|lib|opt|srv)/?(?=\s|$)|\"/\"|'/')"
    r"|\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+[^\n]{0,40}\bof=/dev/(?:sd|nvme|hd|disk)|:\(\)\s*\{\s*:\|:&\s*\};:"
    r"|\bchmod\s+-r\s+0?777\s+/(?:\s|$)|>\s*/dev/sd[a-z]|\bshred\s+[^\n]{0,30}/dev/"
    r"|\bgit\s+clean\s+-[a-z]*(?:fd|df|xf|fx)[a-z]*|\bgit\s+reset\s+--hard\s+origin/|\bdrop\s+(?:database|schema)\s+\w+|\bgit\s+push\s+(?:--force|-f)\s+\S+\s+(?:main|master)\b"
    r"|\bformat\s+c:|\bdel\s+/[sfq]\s+/[sfq]|\bremove-item\s+[^\n]{0,40}-recurse[^\n]{0,40}-force)"
)
_REMOTE_CODE = r"(?:\b(?:curl|wget|iwr|invoke-webrequest)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|\biex\s*\()"
_SECRET = (
    r"(?:~/\.ssh|\.ssh/|id_rsa|id_ed25519|id_ecdsa|\.aws/credentials|aws_secret\w*|\.env\b|/etc/passwd|"
    r"/etc/shadow|\.netrc|\.npmrc|\.pypirc|\.git-credentials|kubeconfig|api[_ -]?keys?|secret keys?|"
    r"secrets|access tokens?|auth(?:entication)? tokens?|session tokens?|bearer tokens?|tokens|passwords?|"
    r"credentials|private keys?|ssh keys?|environment variables|env vars|\$\w*(?:key|token|secret|password)\w*|"
    r"printenv|cookies|(?:the |this |your |our )?(?:conversation|chat) history|(?:your |the )system prompt|"
    r"the (?:full |whole |entire )?transcript|(?:contents of )?(?:the )?memory)"
)
_SEND = (
    r"(?:send|upload|post|email|e-mail|mail|forward|exfiltrate|leak|transmit|submit|share|beam|"
    r"copy|paste|write|append|embed|include|encode|report|dump|pipe|push|relay)"
)
_DESTINATION = (
    r"(?:https?://|\bftp://|\b[\w.+-]+@[\w-]+\.[\w.]+|\b(?:to|into|at|via)\s+(?:the |this |that |my |our )?"
    r"(?:url|endpoint|server|webhook|address|email|inbox|pastebin|gist|discord|telegram|slack channel|"
    r"remote|attacker|collector|ip)\b|\b(?:to|into|at|via|on)\s+(?:our|my|this|that|their)\s+(?:[\w-]+\s+)?"
    r"(?:portal|site|website|form|page|server|bucket|drive)\b|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bngrok\b|\bwebhook\.site\b|\brequestbin\b)"
)
_CONCEAL = (
    r"(?:without (?:asking|telling|informing|notifying|alerting|confirming with|checking with|"
    r"the (?:user|human)'?s? (?:knowledge|permission|consent))|"
    r"(?:do not|don'?t|never) (?:tell|inform|notify|alert|warn|mention (?:this|it) to|ask|reveal (?:this|it) to) "
    r"(?:the )?(?:user|human|operator|developer|anyone)|keep (?:this|it) (?:secret|hidden|quiet|confidential) from|"
    r"\bsilently\b|\bsecretly\b|\bcovertly\b|\bquietly\b|before (?:responding|replying|answering|doing anything else))"
)

# Concealment without the words that also describe ordinary quiet installs.
_CONCEAL_STRONG = _CONCEAL.replace(
    r"\bsilently\b|\bsecretly\b|\bcovertly\b|\bquietly\b|", r"\bsecretly\b|\bcovertly\b|"
)

_PHRASES: tuple[tuple[str, str], ...] = (
    # Overriding or forgetting the agent's instructions.
    ("override", rf"\b{_OVERRIDE_VERB}\s+(?:{_SCOPE}\s+){{0,5}}{_OBJECT}\b"),
    (
        "override",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|everything\s+)?(?:the\s+)?"
        r"(?:above|foregoing|preceding)(?!\s+(?:warnings?|errors?|messages?|outputs?|steps?|sections?|"
        r"examples?|code|commands?|notes?|lines?|paragraphs?|links?|tables?|figures?|images?|list)\b)",
    ),
    (
        "override",
        r"\b(?:ignore|disregard|forget)\s+(?:everything|all|anything|what)\s+(?:you(?:'ve| have)?\s+"
        r"(?:were|been|was)?\s*(?:told|given|taught|instructed)|(?:you )?(?:know|learned)|(?:that )?(?:came|was said) before)",
    ),
    (
        "override",
        r"\b(?:the )?(?:previous|above|prior|earlier|original) instructions (?:are|were) (?:void|cancel+ed|obsolete|revoked|invalid|no longer valid)",
    ),
    (
        "override",
        r"\bnew (?:system )?(?:instructions?|rules|directives?|orders)\s*(?:[:\-—]|follow|apply|take|override)",
    ),
    ("override", r"\b(?:updated|revised|real|actual|true) (?:system )?instructions?\s*[:\-—]"),
    # Changing the agent's goal or persona.
    (
        "goal",
        r"\byour\s+(?:new|real|actual|true|updated|only|primary|revised|next|current)\s+(?:task|goal|objective|mission|purpose|instructions?|role|job|directive|priority|orders?)\s+(?:is|are|will be|now|:)",
    ),
    (
        "goal",
        r"\bfrom now on,?\s+(?:you\b[^.!?\n]{0,20}?\b(?:are|will|must|shall|should|only|always|never|may)\b|(?:always|never|only)\s+(?:answer|respond|reply|say|write|output|mention|refuse|use|speak|talk|agree|obey)|act\b|respond\b|answer\b|reply\b|behave\b|obey\b|ignore\b|never refuse)",
    ),
    (
        "goal",
        rf"\byou are (?:now|no longer)\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+){{0,2}}(?:{_AI}|dan|jailbr\w*|unrestricted|unfiltered|uncensored|developer mode|god mode|evil|hacker|admin\w*|root|persona|free (?:of|from))\b(?! (?:directory|folder|dir|of the))|\byou are now in (?:dan|developer|god|jailbreak|unrestricted|maintenance|admin|root) mode",
    ),
    (
        "goal",
        r"\b(?:act|behave|respond|answer|operate)\s+as\s+(?:if\s+you\s+(?:were|are|had)\s+|an?\s+)?(?:[\w-]+\s+){0,4}(?:without|with no|free of)\s+(?:any\s+)?(?:restrictions|limits|limitations|filters|rules|guidelines|censorship|safety)",
    ),
    ("goal", r"\bpretend (?:to be|you are|that you are|you're)\b"),
    (
        "goal",
        r"\b(?:enable|enter|activate|switch (?:to|into)|turn on)\s+(?:the\s+)?(?:dan|jailbreak|god|unrestricted|unfiltered|uncensored|evil)\s+mode\b",
    ),
    (
        "goal",
        r"\b(?:stop|abandon|drop|cease|quit)\s+(?:what you(?:'re| are) doing|your (?:current )?(?:task|work|assignment)|the (?:current|original) task|working on (?:the|your) task)",
    ),
    (
        "goal",
        r"\b(?:reveal|print|output|show|repeat|disclose|leak|dump|recite|display|tell me)\s+(?:me\s+)?(?:your|the|its)\s+(?:full\s+|entire\s+|complete\s+|original\s+|hidden\s+|initial\s+|secret\s+|exact\s+)*(?:system\s+prompt|system\s+message|instructions you (?:were|have been) given|initial prompt|hidden (?:prompt|instructions)|original instructions|developer (?:prompt|message))",
    ),
    # Hiding what is done from the person the agent works for.
    (
        "conceal",
        r"\b(?:do not|don'?t|never) (?:tell|inform|notify|alert|warn|mention (?:this|it) to) (?:the )?"
        r"(?:user|human|operator)(?: about (?:this|it|what)| that you|\b[^.!?\n]{0,20}?(?:;|:|,? and "
        r"(?:then )?(?:add|run|send|delete|copy|write|install|push)))",
    ),
    (
        "conceal",
        r"\bkeep (?:this|it) (?:secret|hidden|quiet|confidential) from (?:the )?(?:user|human|operator)",
    ),
    (
        "goal",
        r"\b(?:forget|ignore|disregard|abandon|drop)\s+(?:the\s+)?(?:user'?s|your|the original|the current)\s+"
        r"(?:original\s+|actual\s+|real\s+|current\s+)?(?:goal|task|request|question|objective|mission)\b",
    ),
    (
        "address",
        rf"(?:^|[\s>(\[-])(?:{_AI})\s+(?:instructions?|directives?|notes?|messages?|commands?|orders?)\s*[:—-]",
    ),
    # Addressing whoever reads the text as an AI, then telling it what to do.
    (
        "address",
        rf"\b(?:any|every|all|each|the|dear|attention|for the|to the|hey)\s+(?:[\w-]+\s+)?{_AI}\b"
        r"(?:\s+(?:that|who|which)\s+(?:reads?|is reading|sees?|processes|parses)\s+this)?"
        r"\s*[:,—-]\s*(?:please\s+|kindly\s+)?(?:you\s+(?:must|should|need|have)\b|tell|say|ignore|disregard|forget|"
        r"run|execute|send|upload|open|visit|delete|remove|replace|stop|reply|respond|answer|report|"
        r"your\s+(?:goal|task|instructions?|objective))\b",
    ),
    (
        "address",
        rf"\((?:for|to)\s+(?:the|any|all)\s+(?:[\w-]+\s+)?{_AI}\)",
    ),
    (
        "command",
        rf"\b(?:the\s+)?{_AI}\s+(?:must|should|has to|needs to|is required to)\s+(?:not\s+)?"
        r"(?:(?<=not )(?:tell|inform)|ignore|disregard|run|execute|delete|send|upload|replace)\b[^.!?\n]{0,80}"
        r"(?:user|instructions?|guidance|rules|rm -rf|curl|token|key|password)",
    ),
    (
        "goal",
        r"\byour (?:goal|task|objective|mission|instructions?|purpose) (?:has|have) (?:changed|been (?:updated|replaced|changed))",
    ),
    (
        "goal",
        r"\b(?:the|your) new (?:objective|goal|task|mission|purpose) is\b",
    ),
    (
        "override",
        r"\b(?:disregard|ignore|forget)\s+(?:whatever|anything|everything|all)\s+(?:you\s+)?(?:were|have been|was)\s+"
        r"(?:told|given|asked|instructed)",
    ),
    (
        "override",
        r"\b(?:disregard|ignore|forget|abandon)\s+(?:the\s+)?(?:task|job|assignment|request)\s+you\s+(?:were|have been)\s+given",
    ),
    (
        "override",
        r"\b(?:ignore|disregard)\s+the\s+(?:user|human|operator)(?:\s+(?:and|completely|entirely)\b|\s*[,.;:]|\s*$)",
    ),
    # Round 3's classes (studied after its held-out figures were recorded).
    (
        "goal",
        r"(?:^|[\n.!?:;])\s*(?:[-*•>]\s*)?(?:please\s+)?(?:tell|assure|reassure|inform|convince|let) the "
        r"(?:user|human|customer|reader|operator|team)s?\s+(?:know\s+)?(?:that\s+)?[^.!?\n]{0,80}?"
        r"\b(?:passed|is safe|are safe|succeeded|successful|no (?:further|more|issues|problems|"
        r"vulnerabilit\w+)|is fine|already|approved|official|not affected|nothing to worry|is clean)",
    ),
    (
        "goal",
        r"\b(?:always|only|just) (?:answer|say|reply|respond|report|claim|state)\b(?: that|[^.!?\n]{0,60}"
        r"\bregardless\b)",
    ),
    (
        "goal",
        rf"\b(?:reply|respond|answer)\b[^.!?\n]{{0,60}}\bwith\b[^.!?\n]{{0,30}}(?:contents? of|{_SECRET})",
    ),
    (
        "goal",
        r"\b(?:in|with) your (?:next |following |final )?(?:reply|response|answer|message|output)s?\b"
        r"[^.!?\n]{0,40}\b(?:include|add|insert|mention|put|say|state|use|link)\b",
    ),
    (
        "goal",
        r"\bthe (?:verdict|answer|conclusion|response|reply|rating|recommendation) you (?:must|should|"
        r"will|shall|have to|need to) (?:give|say|write|report|provide|reach|state)\b",
    ),
    (
        "goal",
        r"\b(?:the )?(?:actual|real|true) (?:job|task|goal|objective|mission|assignment)s?\s*(?::|is to\b)",
    ),
    (
        "goal",
        rf"\b(?:the\s+)?{_AI}\s+(?:must|should|shall|is to|are to|needs? to|has to|(?:is|are) required to)\s+"
        r"(?:now\s+|always\s+|also\s+|first\s+)?(?:describe|say|claim|tell|recommend|mark|present|insist|"
        r"assert|conclude|replace|approve|merge|report)\b",
    ),
    (
        "goal",
        r"\byou (?:will |must |shall |should |are to )?(?:only )?(?:answer|respond|reply|speak|write|output)"
        r"\b[^.!?\n]{0,40}\b(?:from (?:now|here|this point) on\w*|henceforth|going forward)",
    ),
    (
        "override",
        r"\b(?:everything|all|anything) (?:above|before|prior to) (?:this (?:line|point|message|note)|here)\s+"
        r"(?:was|is)\s+(?:only\s+|just\s+|merely\s+)?(?:a\s+|an\s+)?(?:test|warm-?up|joke|example|drill|"
        r"distraction|placeholder|fake|decoy)",
    ),
    (
        "address",
        r"\b(?:note|message|instructions?|hint|reminder|notice)s?\s+(?:for|to)\s+(?:the\s+|all\s+|any\s+)?"
        r"(?:automated|ai|llm|bot|models?|assistants?|agents?|summari[sz]\w*|crawlers?|language models?)"
        r"(?:\s+[\w-]+){0,3}\s*:",
    ),
    (
        "address",
        r"\b(?:todo|fixme|note|hint|xxx)\s*\(\s*(?:ai|llm|bot|agent|assistant|claude|copilot|codex|gpt|model)\s*\)\s*:",
    ),
    (
        "address",
        rf"(?:^|[.!?]\s+|[\s>(\[])(?:for|to|attention,?)\s+(?:all\s+|any\s+|the\s+)?(?:{_AI})(?:\s+only)?\s*:\s*"
        r"(?:please\s+)?(?:respond|reply|answer|ignore|always|never|do|don'?t|you|run|send|visit|open|"
        r"include|say|tell|add|delete|remove|use)\b",
    ),
    (
        "address",
        r"\b(?:summary|summari[sz]ation|review|ai|chat|search) bots?\s*:",
    ),
    (
        "address",
        rf"\bnext (?:action|step|task|move) for (?:the\s+|this\s+|any\s+)?{_AI}\b",
    ),
    (
        "conceal",
        r"\b(?:do not|don'?t|never) (?:mention|reveal|repeat|quote|disclose|summari[sz]e|acknowledge) "
        r"(?:this|these|the following) (?:paragraph|message|note|instructions?|text|line|section|comment|request)",
    ),
    (
        "conceal",
        r"\b(?:quietly|silently|secretly|covertly)\s+(?:remove|delete|disable|drop|bypass|skip|turn off|"
        r"add|insert)\b",
    ),
    (
        "authority",
        r"\b(?:the )?(?:user|operator|owner|admin\w*|maintainers?|security team) (?:has|have) (?:already )?"
        r"(?:agreed|approved|authori[sz]ed|consented|confirmed|signed off)\b[^.!?\n]{0,60}?[,:;—-]\s*"
        r"(?:so\s+)?(?:please\s+|now\s+)?(?:go ahead|proceed|run|execute|delete|push|deploy|transfer|wipe|reset)",
    ),
    (
        "override",
        r"\bnew (?:top )?(?:priority|policy|requirement|directive|mandate)\b(?: from [\w ]{1,30}?)?\s*[:—-]",
    ),
    (
        "exfiltrate",
        rf"\b(?:should|must|will|needs? to|has to|is to)\s+(?:now\s+|first\s+|also\s+)?(?:open|read|cat|copy|"
        rf"paste|send|upload|post|print|dump|include|attach)\b[^.!?\n]{{0,60}}{_SECRET}",
    ),
    # Round 4's classes (studied after its held-out figures were recorded).
    (
        "address",
        r"\b(?:whoever|anyone|anybody|any (?:tool|program|system|reader)) (?:that |who )?(?:processes|reads|"
        r"summari[sz]es|parses|sees|ingests|is reading|is summari[sz]ing) this\b",
    ),
    (
        "goal",
        r"\bto (?:include|put|add|state|mention|repeat) in (?:any|every|the|your) (?:summary|summaries|answer|"
        r"reply|response|report)\b",
    ),
    (
        "address",
        r"(?:^|[.!?\n]\s*)(?:search engines|crawlers|bots|assistants|agents|llms|language models|ai models)"
        r"(?: and [\w ]{1,20})?\s*:\s",
    ),
    (
        "override",
        r"\b(?:final|last|real|hidden|secret|additional|extra|true) instructions?\s*:",
    ),
    (
        "goal",
        r"\b(?:decode|decrypt|deobfuscate|translate) (?:it |this |the \w+ )?(?:and|then) (?:follow|obey|execute|run|do)\b",
    ),
    (
        "goal",
        r"\binstead of (?:fixing|doing|working on|answering|solving|reviewing) (?:the|your|this|that) "
        r"(?:bug|task|request|question|issue|problem|code)\b",
    ),
    (
        "goal",
        r"\bthe (?:reply|response|answer|message) to the (?:user|customer|human)\b[^.!?\n]{0,30}\b(?:says?|states?|"
        r"claims?|must|should|includes?)\b",
    ),
    (
        "conceal",
        r"\b(?:must not|should not|do not|don'?t|never) (?:reveal|mention|disclose|show) (?:this|the following) "
        r"(?:step|action|part|instruction|request)\b",
    ),
    (
        "exfiltrate",
        rf"(?<!never )(?<!not )(?<!n't )(?<!avoid )\b(?:copy|paste|put|include|post|add|attach)\s+[^.!?\n]{{0,40}}{_SECRET}[^.!?\n]{{0,20}}\b(?:into|in|to)\s+"
        r"(?:the\s+|a\s+|your\s+)?(?:pr|pull request|issue|commit|description|comment|readme|channel|chat|public)\b",
    ),
    (
        "exfiltrate",
        rf"\b(?:print|show|output|list|dump|echo|reveal|include)\s+(?:every|all|the|each|any)?\s*{_SECRET}"
        r"[^.!?\n]{0,30}\b(?:in|into) your (?:reply|response|answer|output)",
    ),
    (
        "address",
        r"(?:^|//|#|--|/\*|\s)\s*(?:assistant|ai|agent|claude|copilot|llm|bot)\s*:[ \t]+(?:please\s+)?"
        r"(?:overwrite|delete|remove|run|execute|send|upload|push|install|replace|ignore|disable|add|download|"
        r"curl|wget|rm)\b",
    ),
    (
        "command",
        r"\b(?:grant|give|assign)\b[^.!?\n]{0,40}\b(?:owner|admin(?:istrator)?|root|superuser|full)\s+"
        r"(?:rights|role|permissions?|access|privileges)\b[^.!?\n]{0,30}\b(?:whole|entire|all|every)\b",
    ),
    # A forged turn inside a line: a speaker label, then that speaker's words.
    (
        "role",
        r"\b(?:assistant|ai)\s*:[ \t]+(?:i(?:'ll| will| am going to|'m going to| shall)|sure|ok(?:ay)?|"
        r"certainly|of course|understood|yes|no problem|done)\b",
    ),
    (
        "role",
        r"\b(?:human|user)\s*:[ \t]+(?:ignore|disregard|forget|stop|now (?:delete|run|send|ignore))\b",
    ),
    # Forged authority.
    (
        "authority",
        r"\b(?:messages?|notes?|instructions?|requests?|updates?|notices?|directives?|orders?|commands?|alerts?)\s+(?:from|by)\s+(?:the\s+|your\s+)?(?:user|admin(?:istrator)?|developers?|system|operator|anthropic|openai|owner|security team|it department|creator|maintainers?)\s*[:\-—]",
    ),
    (
        "authority",
        r"\bthe (?:user|admin(?:istrator)?|operator|owner) (?:has )?(?:authori[sz]ed|pre-?approved|given (?:you )?permission|wants you to|instructed you to|requires you to)\b",
    ),
    (
        "authority",
        r"\b(?:this|the following) (?:action|command|request|operation) (?:is|has been) (?:pre-?)?(?:authori[sz]ed|approved|sanctioned)\b",
    ),
    (
        "authority",
        r"\b(?:permission|approval|authori[sz]ation|consent) (?:has been |was |is )?(?:granted|given|confirmed)"
        r"(?: by the (?:user|admin\w*|owner|operator))?[^.!?\n]{0,30}?(?:[:,;-]\s*|\b)"
        r"(?:proceed|you (?:may|can|are free to)|go ahead|continue to)\b",
    ),
    (
        "authority",
        r"\b(?:the )?(?:user|admin\w*|owner|operator) (?:has )?(?:granted|given|gave) (?:you )?"
        r"(?:permission|approval|consent)\s*[:,;-]\s*(?:proceed|you may|go ahead|continue)",
    ),
    # Speaking to the model that reads the text.
    (
        "address",
        rf"\b(?:attention|note|message|instructions?|notice|reminder|important|warning|memo|directive)\s*(?:to|for)\s+(?:the\s+|all\s+|any\s+|every\s+)?{_AI}\b",
    ),
    (
        "address",
        rf"\bif you are an?\s+(?:[\w-]+\s+){{0,2}}(?:{_AI}|automated|ai-powered|language|large language)\b",
    ),
    (
        "address",
        rf"\b(?:to\s+)?(?:any|all|the|every)\s+{_AI}\s+(?:that is |who is |currently )?(?:reading|processing|parsing|summari[sz]ing|viewing|analy[sz]ing|crawling|ingesting|seeing)\s+(?:this|these|the)\b",
    ),
    (
        "address",
        rf"\b{_AI}s?\s+(?:reading|processing|parsing|summari[sz]ing|viewing|analy[sz]ing)\s+this\s+(?:text|page|file|document|content|message|output|repo|repository|email|issue|comment)\b",
    ),
    (
        "address",
        r"\b(?:when|while|if|before)\s+(?:you\s+are\s+|you're\s+)?summari[sz]ing\s+(?:this|the following|these)\b",
    ),
    (
        "address",
        r"\b(?:in|into)\s+(?:your|the|any)\s+(?:summary|response|reply|answer|output)\s*,?\s+(?:you must |always |please )?(?:include|write|say|state|add|insert|tell|mention|claim|report)\b",
    ),
    (
        "address",
        r"\b(?:this|these) (?:is|are) (?:an? )?(?:new )?(?:instructions?|command|directive) (?:for|to) (?:you|the assistant|the model|the ai)\b",
    ),
    (
        "address",
        rf"\b(?:hey|hi|hello|dear|attention|ok|okay|listen),?\s+{_AI}\s*[,:!]\s*(?:you must|you should|you will|ignore|disregard|forget|run|execute|send|delete|stop|now)\b",
    ),
    # Sending data away.
    (
        "exfiltrate",
        rf"{_IMPERATIVE_LEAD}{_SEND}\s+(?:(?:me|us|them)\s+)?(?:[\w'\"./~$-]+\s+){{0,6}}?{_SECRET}[^.!?\n]{{0,120}}?{_DESTINATION}",
    ),
    (
        "exfiltrate",
        r"\b(?:curl|wget|nc|ncat|netcat|http|httpie|invoke-webrequest|iwr|scp|rsync)\b[^\n]{0,200}?(?:-d\b|--data\S*|-f\b|-t\b|--upload-file|-x\s*post|\s@[~/.$]|<\s*[~/])[^\n]{0,120}?(?:~/\.ssh|\.ssh/|id_rsa|id_ed25519|\.aws|\.env\b|/etc/passwd|/etc/shadow|\.netrc|\.git-credentials|\$\(\s*(?:env|printenv|cat|set)\b|\$\{?\w*(?:key|token|secret|password)\w*)",
    ),
    (
        "exfiltrate",
        r"\b(?:curl|wget|fetch|iwr)\b[^\n]{0,80}https?://[^\s\"']*(?:\$\(|\$\{|`)(?:[^)}`]{0,80})(?:env|printenv|cat|whoami|id_rsa|\.ssh|secret|token|key)",
    ),
    ("exfiltrate", r"!\[[^\]]{0,80}\]\(\s*https?://[^)\s]*[?&][\w-]+=(?:\{|\$|%7b|<|\[)[^)]*\)"),
    (
        "exfiltrate",
        r"\b(?:send|post|upload|email|forward|exfiltrate|leak)\s+(?:all\s+|the\s+|your\s+|any\s+)?(?:conversation|chat|session) (?:history|transcript|log)s?\s+to\b",
    ),
)
# The same override and persona moves in other languages (word order varies,
# so verb and object are matched in either order within a short window).
_MULTILINGUAL: tuple[tuple[str, str], ...] = (
    ("override", r"\btalimatlar\w*\s+(?:yok say|görmezden gel|unut)"),
    (
        "conceal",
        r"(?:不要|别|不許|不许)(?:告诉|告訴|通知)(?:用户|用戶|使用者)|ユーザーに(?:言わ|知らせ)ないで|사용자에게 알리지 ?마",
    ),
    (
        "override",
        r"\b(?:ignore[zrs]?|ignorez|oublie[zr]?|ne tenez pas compte d)\b[^.!?]{0,40}\b(?:instructions?|consignes?|directives?|règles)\b",
    ),
    (
        "override",
        r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olvidar|omite|desestima)\b[^.!?]{0,40}\b(?:instrucciones|indicaciones|reglas|órdenes|directrices)\b",
    ),
    (
        "override",
        r"\b(?:ignore|ignora|ignorar|esqueça|esqueca|desconsidere|desconsidera)\b[^.!?]{0,40}\b(?:instruções|instrucoes|regras|orientações|diretrizes)\b",
    ),
    (
        "override",
        r"\b(?:ignora|ignorate|ignori|dimentica|dimenticate)\b[^.!?]{0,40}\b(?:istruzioni|regole|indicazioni|direttive)\b",
    ),
    (
        "override",
        r"\b(?:ignorier\w*|vergiss|vergesst|vergessen sie|missachte\w*|übergeh\w*)\b[^.!?]{0,50}\b(?:anweisungen|instruktionen|regeln|vorgaben|befehle|richtlinien)\b",
    ),
    ("override", r"\b(?:negeer|vergeet)\b[^.!?]{0,40}\b(?:instructies|regels|aanwijzingen)\b"),
    (
        "override",
        r"(?:игнорир\w*|проигнорир\w*|забудь\w*|забуд\w*|не обращай\w* внимани\w*|отбрось\w*)[^.!?]{0,50}(?:инструкци\w*|указани\w*|правил\w*|команд\w*|промпт\w*)",
    ),
    (
        "override",
        r"(?:ігнору\w*|проігнору\w*|забудь\w*)[^.!?]{0,50}(?:інструкці\w*|вказів\w*|правил\w*)",
    ),
    (
        "override",
        r"\b(?:zignoruj|ignoruj|zapomnij)\b[^.!?]{0,40}\b(?:instrukcje|instrukcji|polecenia|zasady)\b",
    ),
    (
        "override",
        r"\b(?:talimat\w*|kurallar\w*)\b[^.!?]{0,40}\b(?:yoksay\w*|görmezden gel\w*|unut\w*)",
    ),
    (
        "override",
        r"(?:忽略|无视|忽视|無視|不要理会|不要理會|忘记|忘掉|忘記|抛开|拋開)[^。！？]{0,16}(?:指令|指示|说明|說明|提示词|提示詞|规则|規則|命令|要求|设定|設定)",
    ),
    ("override", r"(?:指示|命令|プロンプト|ルール|指令)[^。！？]{0,16}(?:無視|忘れ)"),
    ("override", r"(?:지시|명령|지침|규칙|프롬프트)[^.!?]{0,16}(?:무시|잊어)"),
    ("override", r"(?:تجاهل|انس|تجاهلي)[^.!?]{0,40}(?:التعليمات|الأوامر|التوجيهات)"),
    ("override", r"(?:निर्देशों|निर्देश|आदेशों)[^।!?]{0,30}(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)"),
    (
        "override",
        r"\b(?:bỏ qua|quên|phớt lờ)\b[^.!?]{0,30}\b(?:mọi |tất cả |các )?(?:hướng dẫn|chỉ dẫn|chỉ thị|lệnh) (?:trước|trên|ban đầu)",
    ),
    (
        "override",
        r"\b(?:abaikan|lupakan)\b[^.!?]{0,40}\b(?:instruksi|perintah|petunjuk|aturan)\b",
    ),
    (
        "override",
        r"\b(?:ignorera|glöm|ignorer|glem)\b[^.!?]{0,40}\b(?:instruktioner|instruksjoner|instruktioner|regler)\b",
    ),
    (
        "goal",
        r"(?:你现在是|你現在是|从现在开始你|從現在開始你|あなたは今から|今からあなたは|지금부터 너는|теперь ты|с этого момента ты|à partir de maintenant,? tu|ahora eres|a partir de ahora,? (?:eres|debes)|ab jetzt bist du|von nun an bist du|agora você é|d'ora in poi,? sei)",
    ),
    (
        "goal",
        r"(?:系统提示|系統提示|システムプロンプト|시스템 프롬프트|системн\w* промпт|prompt (?:du )?système|prompt del sistema|systemprompt)[^.!?。]{0,30}(?:输出|顯示|显示|告诉|表示|出力|보여|выведи|покажи|révèle|affiche|muestra|revela|zeige|gib)",
    ),
    (
        "exfiltrate",
        r"(?:发送|發送|上传|上傳|送信|전송|отправ\w*|envoie\w*|envía|envia|sende\w*|invia)[^.!?。]{0,60}(?:密钥|密鑰|密码|密碼|令牌|キー|パスワード|비밀번호|키|ключ\w*|парол\w*|токен\w*|clés?|mot de passe|claves?|contraseñas?|schlüssel|passwort|chiavi|senhas?)[^.!?。]{0,80}(?:https?://|@)",
    ),
)


class _LazyPattern:
    """A regex compiled on first use: compiling the ~90 patterns takes about
    100 ms, which a hook that never scans anything should not pay at import."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self._get().search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._get().finditer(text)


def _lazy(pattern: str, flags: int = 0) -> _LazyPattern:
    return _LazyPattern(pattern, flags)


_PHRASE_RES = tuple((kind, _lazy(pattern)) for kind, pattern in _PHRASES + _MULTILINGUAL)

# Running something, made dangerous by what is run or by how it is asked.
_COMMAND_RES: tuple[tuple[str, _LazyPattern], ...] = (
    ("command", _lazy(rf"{_IMPERATIVE_LEAD}{_RUN}\b[^\n]{{0,80}}?{_DESTRUCTIVE}")),
    (
        "command",
        _lazy(
            rf"(?:^|[.!?:;\n]\s*|\bnow\s+|\bplease\s+|\bimmediately\s+|\bthen\s+){_DESTRUCTIVE}[^\n]*$",
            re.M,
        ),
    ),
    (
        "command",
        _lazy(
            rf"{_IMPERATIVE_LEAD}{_RUN}\b[^\n]{{0,160}}?{_REMOTE_CODE}[^.!?\n]{{0,120}}{_CONCEAL}"
        ),
    ),
    (
        "command",
        _lazy(
            rf"(?:{_IMPERATIVE_LEAD}|\byou (?:must|should|need to|have to|are required to|will now|shall|are to) (?:now |immediately |first )?)(?:{_RUN}|delete|remove|wipe|erase|push|deploy|install|download|disable|commit|merge|publish|transfer|approve)\b[^.!?\n]{{0,160}}{_CONCEAL_STRONG}"
        ),
    ),
    (
        "command",
        _lazy(
            rf"{_CONCEAL}[^.!?\n]{{0,80}}\b{_RUN}\b[^.!?\n]{{0,40}}(?:{_REMOTE_CODE}|{_DESTRUCTIVE}|command|script|following)"
        ),
    ),
    (
        "command",
        _lazy(
            rf"\b{_AI}(?:\s+[\w-]+){{0,4}}?\s*[,:]?\s+(?:you\s+)?(?:must|should|need to|needs to|have to|has to|are required to|is required to|will now|shall|please|now)\s+(?:immediately\s+|first\s+)?(?:{_RUN}|delete|remove|wipe|erase|push|deploy|install|download|modify|edit|overwrite|disable|send|post|upload|email|commit)\b"
        ),
    ),
    (
        "command",
        _lazy(
            rf"\b(?:you|the assistant|the agent|the model|the ai)\s+(?:must|should|need to|have to|are required to|will now|shall)\s+(?:now\s+|immediately\s+|first\s+)?{_RUN}\s+(?:this|the following|these|the command|the script)\b[^.!?\n]{{0,200}}(?:{_REMOTE_CODE}|{_DESTRUCTIVE}|{_CONCEAL}|{_SECRET})"
        ),
    ),
    (
        "command",
        _lazy(
            rf"{_IMPERATIVE_LEAD}(?:delete|remove|wipe|erase|destroy)\s+(?:all\s+|every\s+|the\s+entire\s+|the\s+whole\s+)?(?:the\s+)?(?:user'?s?\s+)?(?:files|repo(?:sitory)?|database|home directory|disk|git history|backups|production data)\b[^.!?\n]{{0,80}}{_CONCEAL}"
        ),
    ),
)

# Role, system and tool markers: forged conversation structure.
_MARKER_RES: tuple[tuple[str, _LazyPattern], ...] = (
    (
        "role",
        _lazy(
            r"<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|developer|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|end_of_text|tool_call|python_tag|channel|message|start|end|return|constrain)\s*\|>"
        ),
    ),
    (
        "role",
        _lazy(
            r"\[/?inst\]|<</?sys>>|<start_of_turn>|<end_of_turn>|\[/?(?:system|sys|system_prompt|system message)\]\s*\S"
        ),
    ),
    (
        "role",
        _lazy(
            r"<\s*/?\s*(?:system|system[-_ ]?(?:prompt|message|reminder|instructions?|override|note)|assistant|human|developer|instructions?|im_start|untrusted[-_]?\w*|transcript|previous_context|summaries|summary_ref)(?:\s[^<>]{0,200})?\s*/?>"
        ),
    ),
    (
        "role",
        _lazy(
            r"(?m)(?:^|[.:;!?]\s+|`{3}\s*)[\s>*#`\[(]*(?:system|system (?:message|prompt|override|notice|instruction|update|alert)|developer message|admin(?:istrator)? (?:message|override|note))\s*[\]):]\s*(?=\S)(?!linux|darwin|windows|x86|arm|macos|ubuntu|debian|\d)"
        ),
    ),
    ("role", _lazy(r"(?m)^[\s>*#]*(?:human|assistant)\s*:\s*\S")),
    (
        "role",
        _lazy(
            r"(?m)(?:^\s*|\s)#{2,}\s*(?:system|instructions?|new instructions|developer|assistant|response)\s*(?::|$)"
        ),
    ),
    (
        "role",
        _lazy(
            r"\b(?:begin|start|end)\s+(?:of\s+)?(?:the\s+)?(?:system|developer)\s+(?:prompt|message|instructions?)\b"
        ),
    ),
    (
        "tool",
        _lazy(
            r"<\s*/?\s*(?:tool_use|tool_result|tool_call|tool_response|tool_output|function_calls?|function_results?|function_response|invoke|antml:[\w-]+|fnr?)\b[^<>]{0,200}>"
        ),
    ),
    (
        "tool",
        _lazy(
            r"\"type\"\s*:\s*\"(?:tool_use|tool_result|function_call|server_tool_use)\"|\"tool_calls\"\s*:\s*\[|\bto=functions\.\w+|\bfunctions\.\w+\s*\(\s*\{"
        ),
    ),
    (
        "tool",
        _lazy(
            r"(?m)(?:^|[:;.]\s)[\s>*\[(]*(?:tool[_ ]result|function[_ ]result|tool[_ ]output|observation|tool response)\s*(?:\(\w+\))?\s*[\]:]\s*(?=[^\n]*\b(?:approved|authori[sz]ed|granted|permission|confirmed|you (?:may|must|should|can) (?:now )?)\b)"
        ),
    ),
)
# An inline code span (single backticks); a fenced block is not an exemption.
_CODE_SPAN_RE = re.compile(r"(?<!`)`[^`\n]{1,200}`(?!`)")

# A third person reporting an instruction ("the page told the reader to ignore
# its instructions") is the form the prompts ask a model to write.
_REPORTED_RE = re.compile(
    r"\b(?:asked|asks|asking|told|tells|telling|instructed|instructs|wanted|wants|requested|requests|"
    r"said|says|saying|wrote|writes|claimed|claims|tried|tries|attempted|attempts|urged|urges|"
    r"directed|directs|demanded|demands|contained|contains|included|includes|embedded|hid|hides|"
    r"planted|injected|quoted|quotes|reads|read|stated|states|suggested|suggests|attempting|trying)\b"
    # Indirect speech only ("told the reader to ..."): a quotation after a
    # colon or a quote mark is the instruction itself, copied.
    r"[^.!?\n:\"'“”«»‘’]{0,120}\b(?:to|that|into)\s+(?:\w+\s+){0,2}$"
)
_SECOND_PERSON_RE = re.compile(r"\byou(?:r|rs|rself)?\b")


# Letters only, every separator removed: what is left of a phrase spelled out
# with spaces, dashes or dots between its letters ("i g n o r e", "I-G-N-O-R-E").
_COMPACT_RES = (
    (
        "override",
        _lazy(
            r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your|of|every|these)*"
            r"(?:previous|prior|above|earlier|preceding|original|system)+"
            r"(?:instructions?|rules|prompts?|guidelines|directions|guidance)"
        ),
    ),
    ("goal", _lazy(r"youarenow(?:an?)?(?:unrestricted|unfiltered|dan|jailbroken|free)")),
    ("role", _lazy(r"(?:^|[^a-z])systemprompt(?:override|follows)|imstartsystem")),
)


_NOT_LETTER_RE = re.compile(r"[^a-z]+")
# What ``codecs.encode(text, "rot13")`` does: a translation of the ASCII letters.
_ROT13 = str.maketrans(
    {
        chr(first + i): chr(first + (i + 13) % 26)
        for first in (ord("a"), ord("A"))
        for i in range(26)
    }
)


def _compact(folded: str) -> str:
    return _NOT_LETTER_RE.sub("", folded)


def _views(text: str, *, depth: int = 0) -> list[tuple[str, str]]:
    base = _base(text)
    views = [("text", base)]
    folded = _folded(base)
    if folded != base:
        views.append(("folded", folded))
    views.append(("compact", _compact(folded)))
    if depth < 2:
        for hidden in _decoded(text):
            views.extend(
                (f"decoded-{name}", view) for name, view in _views(hidden, depth=depth + 1)
            )
        if depth == 0 or _CIPHER_HINT_RE.search(text):
            views.append(("rot13", base.translate(_ROT13)))
    return views


# What runs on which view: phrases and commands on every readable view (the
# text, folded and decoded ones), phrases alone on the rot13 view, markers on
# the readable views with inline code taken out, the compacted patterns on the
# compacted view.
_READABLE_RES = _PHRASE_RES + _COMMAND_RES


class _Gates(NamedTuple):
    """The literal gates ``scan`` uses, positions as in the tuples above."""

    readable: LiteralGate  # _READABLE_RES then _MARKER_RES (the phrases come first)
    compact: LiteralGate  # _COMPACT_RES


def _gate(
    patterns: tuple[tuple[str, _LazyPattern], ...], spaces: frozenset[str] | None
) -> LiteralGate:
    return LiteralGate(
        ((pattern, pattern.pattern, pattern.flags) for _, pattern in patterns),
        spaces=spaces,
        kept=True,  # the detector's own patterns: their literal sets are kept
    )


@functools.cache
def _gates() -> _Gates:
    """Built on the first scan (a hook that never scans does not pay for it)."""
    return _Gates(
        readable=_gate(_READABLE_RES + _MARKER_RES, _VIEW_SPACES),
        compact=_gate(_COMPACT_RES, None),
    )


# Every view is built from ``_base``, where each run of whitespace other than
# a newline became one space, so a space and a newline are the only whitespace
# in it: the gates read ``\s`` as one of those two. Only the Unicode
# decompositions of ``_folded`` could bring another back; a view holding one
# runs every pattern of its family (``_gated``).
_VIEW_SPACES = frozenset(" \n")
_OTHER_SPACE_RE = re.compile(r"[^\S \n]")


def _gated(gate: LiteralGate, body: str) -> list[int]:
    """``gate.indices(body)``, or every position when ``body`` holds other whitespace."""
    if body.isascii() or not _OTHER_SPACE_RE.search(body):
        return gate.indices(body)
    return list(range(len(gate)))


def scan(text: str, *, reported_speech: bool = False) -> list[Finding]:
    """Every instruction-like passage in ``text`` (empty when there is none).

    ``reported_speech=True`` accepts an override or goal change that a third
    party is reported to have asked for ("the README asked the reader to
    ignore all previous instructions"): the form summaries are told to use.
    Markers, exfiltration and dangerous commands are flagged either way.
    """
    if not text or not text.strip():
        return []
    findings: list[Finding] = []
    # Invisible characters between the letters of words: text hidden from a
    # person reading it, there for a model to read.
    if not text.isascii() and len(_INTERLEAVED_RE.findall(text)) >= 4:
        findings.append(Finding("encoded", "zero-width characters inside words", "raw"))
    # Kinds matched in a readable view, reported speech included: the
    # compacted view only adds what spacing tricks hid from those.
    readable: set[str] = set()
    # Patterns whose required words are absent cannot match and are not run:
    # each gate lists, in order, the patterns of its family that may match.
    gates = _gates()
    readable_count = len(_READABLE_RES)
    phrase_count = len(_PHRASE_RES)
    for view, body in _views(text):
        if view == "compact":
            for position in gates.compact.indices(body):
                kind, pattern = _COMPACT_RES[position]
                compact = pattern.search(body)
                if compact and kind not in readable:
                    findings.append(Finding(kind, compact.group(0)[:160], view))
            continue
        rot13 = view == "rot13"
        positions = _gated(gates.readable, body)
        for position in positions:
            if position >= (phrase_count if rot13 else readable_count):
                break  # rot13 is read for phrases only; the markers are below
            kind, pattern = _READABLE_RES[position]
            for match in pattern.finditer(body):
                readable.add(kind)
                if (
                    reported_speech
                    and kind in ("override", "goal", "address")
                    and _reported(body, match)
                ):
                    continue
                findings.append(Finding(kind, match.group(0).strip()[:160], view))
                break
        if rot13:
            continue
        # Markup quoted as code (`<system>`) is documentation, and escaping
        # keeps it inert wherever it is shown.
        unquoted = _CODE_SPAN_RE.sub(" ", body) if "`" in body else body
        if unquoted != body:
            positions = _gated(gates.readable, unquoted)
        markers = [p - readable_count for p in positions if p >= readable_count]
        for position in markers:
            kind, pattern = _MARKER_RES[position]
            marker = pattern.search(unquoted)
            if marker:
                findings.append(Finding(kind, marker.group(0).strip()[:160], view))
    return _dedupe(findings)


def _reported(body: str, match: re.Match[str]) -> bool:
    start = max(body.rfind(".", 0, match.start()), body.rfind("\n", 0, match.start()), -1) + 1
    before = body[start : match.start()]
    sentence_end = re.search(r"[.!?\n]", body[match.end() :])
    after = body[match.end() : match.end() + (sentence_end.start() if sentence_end else 200)]
    if _SECOND_PERSON_RE.search(before + match.group(0) + after):
        return False
    return bool(_REPORTED_RE.search(before))


def _dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for finding in findings:
        key = (finding.kind, finding.excerpt)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


# How lossless renders tool parts into message text (`[tool_result] ...`):
# dropped when two lines are read together, so a payload split across two
# tool results reads as one sentence, as it would to a model.
_RENDER_MARKER_RE = re.compile(
    r"^\s*\[(?:tool_result|tool_use[^\]\n]{0,80}|tool output|file[^\]\n]{0,80})\]\s*"
)


def joined(first: str, second: str) -> str:
    """Two neighbouring lines as one text to scan (render markers dropped)."""
    return _RENDER_MARKER_RE.sub("", first) + "\n" + _RENDER_MARKER_RE.sub("", second)


_CONTINUATION_RE = re.compile(
    r"^\s*(?:[-*>]\s*)?(?:(?:and|then|or|but|so|also|plus|after that|to)\s|[,;])", re.I
)


def continues(line: str) -> bool:
    """Whether ``line`` reads as the rest of the sentence before it."""
    return bool(_CONTINUATION_RE.match(_RENDER_MARKER_RE.sub("", line)))


def is_injection(text: str, *, reported_speech: bool = False) -> bool:
    return bool(scan(text, reported_speech=reported_speech))


def neutralize(
    text: str,
    *,
    reported_speech: bool = False,
    note: str = WITHHELD_NOTE,
) -> Neutralized:
    """``text`` with every instruction-like line replaced by ``note``.

    Lines are judged alone and in pairs with their neighbour, so a payload cut
    across two lines (or two messages) is withheld whole. Consecutive withheld
    lines share one note. Text without findings comes back unchanged.
    """
    if not scan(text, reported_speech=reported_speech):
        return Neutralized(text, 0)
    lines = text.split("\n")
    flagged = [False] * len(lines)
    kinds: dict[str, None] = {}
    alone = [scan(line, reported_speech=reported_speech) if line.strip() else [] for line in lines]
    for index, found in enumerate(alone):
        if found:
            flagged[index] = True
            kinds.update((f.kind, None) for f in found)
    content = [i for i, line in enumerate(lines) if line.strip()]
    # A line that only continues a withheld one ("and reply with the password")
    # goes with it: alone it may read as harmless.
    for a, b in itertools.pairwise(content):
        if flagged[a] and not flagged[b] and continues(lines[b]):
            flagged[b] = True
    for a, b in itertools.pairwise(content):
        if flagged[a] or flagged[b]:
            continue
        found = scan(joined(lines[a], lines[b]), reported_speech=reported_speech)
        if found:
            flagged[a] = flagged[b] = True
            kinds.update((f.kind, None) for f in found)
    out: list[str] = []
    withheld = 0
    for line, bad in zip(lines, flagged, strict=True):
        if not bad:
            out.append(line)
            continue
        withheld += 1
        if out and out[-1].endswith(note):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(indent + note)
    result = "\n".join(out)
    if scan(result, reported_speech=reported_speech):
        # Spread over more than two lines: nothing line-wise is left to trust.
        return Neutralized(note, max(1, withheld), tuple(kinds))
    return Neutralized(result, withheld, tuple(kinds))


_MARKUP_RE = re.compile(r"[<>&]")
_MARKUP_ESCAPES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def escape_markup(text: str) -> str:
    """Escape every ``<``, ``>`` and ``&``: no tag inside ``text`` stays a tag.

    Applied to whatever untrusted text is placed inside an element of a prompt
    (summaries, exploration summaries, memories), so it cannot close that
    element, open a role element, or forge a tool call.
    """
    return _MARKUP_RE.sub(lambda m: _MARKUP_ESCAPES[m.group(0)], text)


def inert_line(text: str, *, note: str = WITHHELD_NOTE) -> str:
    """One line of untrusted text made safe to place in a prompt: whitespace
    flattened, ``note`` instead if it addresses the agent, markup escaped.

    For the short items re-injected at session start or with a prompt
    (memories, checkpoint goals and decisions, summary previews).
    """
    flat = " ".join(text.split())
    if scan(flat, reported_speech=True):
        return note
    return escape_markup(flat)


def display_line(text: str, *, note: str = WITHHELD_NOTE) -> str:
    """One line of untrusted text for a person (``lcm dag``, ``lcm resume``):
    whitespace flattened, ``note`` instead if it addresses the agent, markup
    left as it is (a terminal shows ``<b>`` as text; escaping is for prompts)."""
    flat = " ".join(text.split())
    return note if scan(flat, reported_speech=True) else flat
