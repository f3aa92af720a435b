"""Ways the reader's answer can change after a prompt or model change
(``EXAMPLE_RAG_READER``):

- ``memory``: the bot answers partly from its own "memory", the way an LLM
  does when the prompt stops holding it to the excerpts. After the first
  sentence of every answer it blends in one statement that no current article
  supports: an outdated 2023 fact stated as current, or a plausible invented
  detail, picked by the topic of the question (``MEMORY``).
- ``paraphrase``: the bot restates each retrieved sentence in other words
  without changing its meaning: a trailing time or condition phrase moves to
  the front, common words are swapped for synonyms ("receive" -> "get",
  "contact" -> "get in touch with"), "does not" becomes "doesn't", small
  numbers are spelled out. Nothing is added or dropped.

- ``first_clause``: a reader sensitive to how a message is laid out, the way a small
  model latches onto the start of a long message: of the new message it reads only the
  first clause that states something (the first line, bullets stripped, that is not a
  lead-in ending in ":" or ","; of that line the first sentence). A one-clause message
  reads as before; a list of clauses (CONCAT's bullets, a recap) is answered from its
  first clause, with the earlier turns as the history policy keeps them. Retrieval still
  searches with the whole message.

All are deterministic (the same question always gets the same answer).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import replace

from pytest_ragdive import Context

from .history import Query
from .reader import Reading
from .text import split_sentences, stem, tokenize

STYLES = ("extractive", "memory", "paraphrase", "first_clause")

#: (topic words, statement): what the bot "remembers"; none of it is in a current article
MEMORY: tuple[tuple[str, str], ...] = (
    ("pro price month plan cost", "The Pro plan is $9 a month and keeps 14 days of video history."),
    ("business plan user price", "Business comes with unlimited cloud storage for every camera on the site."),
    ("enterprise sales quote", "Enterprise contracts always include an on-site installation visit."),
    ("trial free", "Trials can be extended once by another 30 days from the billing page."),
    ("invoice billing payment card paypal", "Invoices can also be paid in Bitcoin through the partner portal."),
    ("cancel downgrade upgrade change", "Cancelling before the 15th of the month refunds the whole month."),
    ("failed payment retry suspend", "After a failed payment the cameras stop recording within one hour."),
    ("discount nonprofit education student", "Students get a 50% discount on every plan with a school email address."),
    ("refund money back", "Refunds normally reach your card within 24 hours of approval."),
    ("return hardware label inspection", "Opened hardware can be returned within 60 days for store credit."),
    ("shipping delivery express standard", "Express delivery arrives the next morning anywhere in Europe."),
    ("customs duty import tax", "Lumio pays all import duties on orders over $100."),
    ("track order tracking", "Every order ships with a live map of the courier's position."),
    ("warehouse europe moved", "The old warehouse in Rotterdam still accepts walk-in returns."),
    ("warranty repair replace", "The warranty also covers accidental damage such as drops and water."),
    ("hub setup led light", "A blinking purple light means the Hub is pairing with a second Hub."),
    ("reset factory", "Holding the reset button for 60 seconds also erases your cloud recordings."),
    ("firmware update", "Firmware updates install every Sunday at 3 am local time."),
    ("cam battery charge range", "The Cam battery lasts about a year on a single charge in eco mode."),
    ("sensor", "Sensors also measure the humidity of the room."),
    ("error code h101 offline", "Error codes are cleared by unplugging the Hub for ten seconds."),
    ("api request rate limit minute", "Unused API requests roll over to the next minute."),
    ("api key token", "API keys expire after 30 days and renew automatically by email."),
    ("webhook", "Failed webhooks are retried every hour for up to 30 days."),
    ("2fa two factor authentication phone lost", "Support can switch off two-factor authentication for you over the phone."),
    ("password login sign", "Passwords must be changed every 90 days."),
    ("sso saml single sign", "Single sign-on is available on every plan, including Starter."),
    ("team role member admin owner viewer", "Viewers can also download and delete recordings."),
    ("delete deletion account close", "Deleted accounts can be restored by support within 90 days."),
    ("export data download", "Exports include a full copy of every recording in 4K."),
    ("retention history keep video days", "Video is kept for an extra 30 days after you downgrade."),
    ("privacy gdpr security certification", "Lumio is certified under HIPAA for healthcare customers."),
    ("support contact chat email", "Phone support is available around the clock on every plan."),
    ("status uptime sla outage", "Lumio refunds a full month when uptime drops below 99.9%."),
    ("integration alexa google home", "Lumio works with Apple HomeKit out of the box."),
    ("app browser android ios", "The desktop app also runs on Linux."),
)
_GENERIC = (
    "Most customers find this is sorted within a few minutes.",
    "This has been the case since the 2021 relaunch of Lumio Cloud.",
)
_TOPICS = [(frozenset(stem(w) for w in words.split()), text) for words, text in MEMORY]


def recall(query: Query, answer: str) -> str:
    """The memory statement for this question: the entry sharing most topic words with the
    question (then the answer); a generic one, fixed per question, when none does."""
    q = set(tokenize(query.current))
    a = set(tokenize(answer))
    best, best_key = "", (0, 0)
    for topic, text in _TOPICS:
        key = (len(topic & q), len(topic & a))
        if key > best_key:
            best, best_key = text, key
    return best or _GENERIC[zlib.crc32(query.current.encode()) % len(_GENERIC)]


def blend_memory(reading: Reading, query: Query) -> Reading:
    """The answer with one memory statement after its first sentence (abstentions unchanged)."""
    if reading.abstained:
        return reading
    sentences = split_sentences(reading.answer)
    memory = recall(query, reading.answer)
    return replace(reading, answer=" ".join([*sentences[:1], memory, *sentences[1:]]))


_SYNONYMS = (
    (r"\bcosts\b", "is priced at"),
    (r"\bincludes\b", "comes with"),
    (r"\blasts\b", "runs for"),
    (r"\bmeans\b", "indicates"),
    (r"\breceive(s|d)?\b", r"get\1"),
    (r"\bpurchases\b", "buys"),
    (r"\brequires\b", "needs"),
    (r"\brequired\b", "needed"),
    (r"\bapproximately\b", "about"),
    (r"\bcontact (support|the sales team|us)\b", r"get in touch with \1"),
    (r"\bimmediately\b", "right away"),
    (r"\bautomatically\b", "on its own"),
    (r"\bbegins\b", "starts"),
    (r"\bdisplays\b", "shows"),
    (r"\bselect\b", "choose"),
    (r"\blarge\b", "big"),
    (r"\bdoes not\b", "doesn't"),
    (r"\bdo not\b", "don't"),
    (r"\bis not\b", "isn't"),
    (r"\bcannot\b", "can't"),
)
_SYNONYM_RES = [(re.compile(p), r) for p, r in _SYNONYMS]
_NUMBERS = {str(i): w for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_SMALL_NUMBER = re.compile(r"(?<![$\d.,])\b([2-9]|10)\b(?![.,]\d|%)")
_TRAILING = re.compile(
    r"^(?P<head>[A-Z][^,;:]{12,}?) (?P<tail>(?:within|after|before|during|until|once|when|if) [^,;:]{3,40})(?P<end>[.!])$"
)


def restate(sentence: str) -> str:
    """One sentence in other words, same meaning."""
    s = sentence
    m = _TRAILING.match(s)
    if m:
        head = m["head"]
        head = head[0].lower() + head[1:] if not head.startswith(("Lumio", "I ", "API", "SSO")) else head
        s = f"{m['tail'][0].upper()}{m['tail'][1:]}, {head}{m['end']}"
    for pattern, repl in _SYNONYM_RES:
        s = pattern.sub(repl, s)
    return _SMALL_NUMBER.sub(lambda n: _NUMBERS[n.group(1)], s)


def paraphrase(reading: Reading) -> Reading:
    """The answer with every sentence restated (abstentions unchanged)."""
    if reading.abstained:
        return reading
    return replace(reading, answer=" ".join(restate(s) for s in split_sentences(reading.answer)))


def recognise_restated(query: Query, contexts: Sequence[Context]) -> Query:
    """The query with every restated context sentence in the earlier answers put back in the
    article's words, so that the reader still knows what it already said."""
    answers = list(query.answers)
    for ctx in contexts:
        for sentence in split_sentences(ctx.text):
            said = restate(sentence)
            if said != sentence:
                answers = [a.replace(said, sentence) for a in answers]
    return replace(query, answers=tuple(answers))


def first_clause(text: str) -> str:
    """The first clause of a message that states something (see the module docstring)."""
    for line in text.splitlines():
        line = line.strip().lstrip("-*•").strip()
        if not line or line.endswith((":", ",")):
            continue
        return (split_sentences(line) or [line])[0]
    return text


def read_first_clause(query: Query) -> Query:
    """The reader's query with the new message cut to its first clause."""
    return replace(query, current=first_clause(query.current))


def apply_style(style: str, reading: Reading, query: Query) -> Reading:
    """The reading as the configured reader style would answer it."""
    if style == "memory":
        return blend_memory(reading, query)
    if style == "paraphrase":
        return paraphrase(reading)
    return reading
