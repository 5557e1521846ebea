"""A student's display name: what is kept of what they typed, and when two names are the same to a
person reading a roster.

The rule (after Unicode TR39, without its full data):
  - kept: the text in NFKC (full-width and mathematical letters become plain ones), its invisible
    characters removed (format characters such as zero-width joiners and bidi controls, and the
    rest of Unicode's default-ignorable ones: Hangul fillers, variation selectors, ... and the
    blank Braille pattern), its runs of spaces made one;
  - refused: a control, private-use or unassigned character; a combining mark with no letter
    before it or more than MAX_MARKS on one letter; letters of scripts that are not written
    together (Latin with Cyrillic, Greek with Latin, ...; Latin with Han, kana or Hangul is one
    writing: Japanese, Korean); a name with no letter or digit;
  - the same as another name: the same skeleton, its accents and case dropped, every digit as its
    value, and the letters of other scripts that look like Latin ones (Cyrillic, Greek, Armenian,
    Cherokee, small capitals) and the Latin look-alikes (l I 1 |, O 0, rn m, vv w) as one letter.
"""
import unicodedata

MAX_MARKS = 2  # combining marks on one letter: Vietnamese needs two; more only hides or smears

# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt), which render as
# nothing, and the blank Braille pattern, which renders as a blank.
INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)

# Scripts written together in one name (TR39's "highly restrictive" sets); any one script alone is fine.
SCRIPTS_TOGETHER = (
    {"LATIN", "CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"},
    {"LATIN", "CJK", "BOPOMOFO"},
    {"LATIN", "CJK", "HANGUL"},
)

# Letters that look like Latin ones, by case (a capital and a small letter may look like different
# Latin letters: Greek Η is H, η is n), then Latin's own look-alikes.
LOOK_ALIKES = dict(pair for line in (
    "АA ВB СC ЕE НH ІI ЈJ КK МM ОO РP ЅS ТT ХX УY З3 ҮY бb ьb"  # Cyrillic
    " аa еe іi јj оo рp сc уy ѕs хx һh ԁd ԛq ԝw ӏl ɡg",
    "ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX αa γy ιi κk νv οo ρp τt υu χx",  # Greek
    "ՕO ՍU ՏS օo սu ցg ոn հh քp զq",  # Armenian
    "ᎪA ᏴB ᏟC ᎬE ᎻH ᏆJ ᏦK ᏞL ᎷM ᏁN ᎾO ᏢP ᏚS ᎢT ᏙV ᏔW ᎳW ᏃZ",  # Cherokee
    "ᴀa ʙb ᴄc ᴅd ᴇe ɢg ʜh ɪi ᴊj ᴋk ʟl ᴍm ɴn ᴏo ᴘp ʀr ꜱs ᴛt ᴜu ᴠv ᴡw ʏy ᴢz ıi",  # small capitals
    "Il |l 1l 0o",  # Latin's own: a capital I, a bar and a one are an l; a zero an o
) for pair in line.split())
SEQUENCE_LOOK_ALIKES = (("rn", "m"), ("vv", "w"))  # after casefolding


class NameRefused(ValueError):
    """A name that cannot be a student's: the message says why."""


def invisible(c):
    point = ord(c)
    return unicodedata.category(c) == "Cf" or any(low <= point <= high for low, high in INVISIBLE_RANGES)


def script(c):
    """The script of a letter, as its Unicode name begins (LATIN, CYRILLIC, CJK, HANGUL, ...)."""
    try:
        return unicodedata.name(c).split()[0]
    except ValueError:
        return None


def display_name(value, field, limit):
    """What is kept of a name typed as `value`, or NameRefused naming the problem."""
    if not isinstance(value, str):
        raise NameRefused(f"{field} must be text")
    text = unicodedata.normalize("NFKC", value)
    for c in text:
        if unicodedata.category(c) in ("Cc", "Co", "Cn", "Cs") and not c.isspace():
            raise NameRefused(f"{field} holds a character that cannot be shown (U+{ord(c):04X})")
    text = " ".join("".join(c for c in text if not invisible(c)).split())
    if not any(unicodedata.category(c)[0] in "LN" for c in text):
        raise NameRefused(f"{field} has no letter or digit that can be seen: type a name")
    if len(text) > limit:
        raise NameRefused(f"{field} is longer than {limit} characters")
    marks = 0
    for index, c in enumerate(unicodedata.normalize("NFD", text)):
        marks = marks + 1 if unicodedata.category(c).startswith("M") else 0
        if marks and index == 0:
            raise NameRefused(f"{field} starts with an accent that belongs to no letter")
        if marks > MAX_MARKS:
            raise NameRefused(f"{field} stacks more than {MAX_MARKS} accents on one letter")
    scripts = {script(c) for c in text if unicodedata.category(c).startswith("L")} - {None}
    if len(scripts) > 1 and not any(scripts <= together for together in SCRIPTS_TOGETHER):
        raise NameRefused(f"{field} mixes letters of {' and '.join(sorted(s.title() for s in scripts))}: "
                         f"write it in one alphabet")
    return text


def skeleton(name):
    """What two names that look the same to a reader have in common (see the module's rule)."""
    bare = "".join(c for c in unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name))
                   if not unicodedata.category(c).startswith("M") and not invisible(c))
    digits = "".join(str(unicodedata.digit(c)) if unicodedata.category(c) == "Nd" else c for c in bare)
    bare = "".join(LOOK_ALIKES.get(c, c) for c in digits).casefold()
    for seen, meant in SEQUENCE_LOOK_ALIKES:
        bare = bare.replace(seen, meant)
    return " ".join(bare.split())
