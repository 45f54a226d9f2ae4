#!/usr/bin/env python3
"""Generate data/sample/: a small corpus with planted near-duplicates.

Run from anywhere: python3 data/gen-sample.py [OUTDIR]. The output is
checked in; rerunning rewrites identical files (fixed seed, Python's
Mersenne Twister is stable across versions). It prints the true Jaccard
similarity of every planted pair, computed the way simlsh-dedup does by
default (char 5-shingles after ASCII lower-casing and whitespace collapsing).
"""
import os
import random
import re
import sys

SEED = 20240607

THEMES = {
    "harbour": ["harbour", "ferry", "pier", "crane", "tide", "cargo", "lighthouse",
                "trawler", "dock", "buoy", "sailor", "warehouse", "net", "gull"],
    "garden": ["garden", "tomato", "hedge", "compost", "seedling", "greenhouse", "rake",
               "orchard", "beetle", "trellis", "pumpkin", "hose", "tulip", "shed"],
    "software": ["compiler", "release", "branch", "parser", "server", "patch", "module",
                 "cache", "thread", "build", "test suite", "library", "schema", "log"],
    "kitchen": ["oven", "recipe", "saucepan", "dough", "onion", "spice", "kettle",
                "cupboard", "knife", "broth", "loaf", "butter", "skillet", "ladle"],
    "travel": ["train", "station", "suitcase", "map", "hostel", "border", "ticket",
               "valley", "bridge", "guide", "village", "bus", "passport", "inn"],
    "science": ["sample", "microscope", "experiment", "reactor", "telescope", "probe",
                "spectrum", "crystal", "enzyme", "sensor", "colony", "signal", "lens",
                "solvent"],
    "music": ["choir", "violin", "rehearsal", "drum", "melody", "conductor", "organ",
              "chord", "score", "piano", "trumpet", "concert", "tempo", "ballad"],
    "city": ["council", "tram", "square", "library", "market", "street", "tower",
             "museum", "park", "bakery", "festival", "clinic", "school", "canal"],
}
ADJ = ["old", "quiet", "narrow", "bright", "heavy", "careful", "early", "broken",
       "new", "distant", "crowded", "small", "patient", "rusty", "golden", "damp",
       "steady", "curious", "hidden", "familiar", "simple", "late", "warm", "grey"]
VERB = ["repaired", "checked", "moved", "painted", "measured", "described",
        "opened", "cleaned", "counted", "followed", "visited", "replaced", "tested",
        "carried", "noticed", "finished", "covered", "ordered", "watched", "sorted"]
VERB_INF = ["repair", "check", "move", "paint", "measure", "describe", "open",
            "clean", "count", "follow", "visit", "replace", "test", "carry",
            "finish", "cover", "order", "watch", "sort", "rebuild"]
ADV = ["slowly", "quickly", "twice", "again", "carefully", "quietly", "at last",
       "without fuss", "once more", "by hand", "in silence", "before noon"]
NAMES = ["Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo",
         "Ines", "Jonas", "Kaito", "Lena", "Marta", "Nils", "Olga", "Pavel",
         "Rosa", "Samir", "Tove", "Ulla", "Viktor", "Wanda", "Yusuf", "Zoe"]
TIMES = ["on Monday", "after lunch", "before the storm", "in the spring",
         "at dawn", "during the holidays", "by the end of the week", "last winter",
         "in the evening", "on the first warm day", "after the meeting"]
NUMS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "a dozen", "twenty", "forty"]

TEMPLATES = [
    "The {adj} {n} was {v} {adv} by {name}.",
    "{name} {v} the {adj} {n} near the {n2} {time}.",
    "Nobody expected the {n} to {vi} the {n2} so {adv2}.",
    "After the {n} had been {v}, we {v2} {num} {n2}s and {v3} the {adj} {n3}.",
    "{name} said that the {adj} {n} would {vi} the {n2} {time}.",
    "There were {num} {adj} {n}s beside the {n2}, and each one was {v} {adv}.",
    "If the {n} is {adj}, {name} will {vi} the {n2} and {vi2} the {n3}.",
    "We {v} the {n} {time}, although the {n2} looked {adj}.",
    "The {n2} next to the {adj} {n} was {v} {time}, so {name} {v2} it {adv}.",
    "{name} and {name2} {v} {num} {n}s while the {adj} {n2} {v2} the {n3}.",
    "Later, the {n} was {adj} again, and the {n2} had to be {v} {adv}.",
    "It took {num} days to {vi} the {adj} {n} that {name} had {v} {time}.",
]


def sentence(rng, theme):
    nouns = THEMES[theme]
    t = rng.choice(TEMPLATES)
    return t.format(
        adj=rng.choice(ADJ), n=rng.choice(nouns), n2=rng.choice(nouns),
        n3=rng.choice(nouns), v=rng.choice(VERB), v2=rng.choice(VERB),
        v3=rng.choice(VERB), vi=rng.choice(VERB_INF), vi2=rng.choice(VERB_INF),
        adv=rng.choice(ADV), adv2=rng.choice(["quickly", "slowly", "easily", "badly"]),
        name=rng.choice(NAMES), name2=rng.choice(NAMES), time=rng.choice(TIMES),
        num=rng.choice(NUMS))


def wrap(text, width=72):
    out, line = [], ""
    for w in text.split(" "):
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
        else:
            line = w if not line else line + " " + w
    if line:
        out.append(line)
    return "\n".join(out)


def document(rng, theme, title, paragraphs=None):
    paras = paragraphs or rng.randint(3, 5)
    body = []
    for _ in range(paras):
        body.append(" ".join(sentence(rng, theme) for _ in range(rng.randint(3, 5))))
    return title + "\n\n" + "\n\n".join(wrap(p) for p in body) + "\n"


def edit_words(rng, text, n):
    """Replace n words (outside the title) with other plausible words."""
    lines = text.split("\n")
    title, rest = lines[0], "\n".join(lines[1:])
    words = rest.split(" ")
    pool = ADJ + VERB
    for _ in range(n):
        i = rng.randrange(len(words))
        if words[i].strip().isalpha():
            words[i] = rng.choice(pool)
    return title + "\n" + " ".join(words)


def typos(rng, text, n):
    """Swap n pairs of adjacent letters, as fast typing does."""
    chars = list(text)
    done = 0
    while done < n:
        i = rng.randrange(len(text) // 8, len(chars) - 2)
        if chars[i].isalpha() and chars[i + 1].isalpha():
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
            done += 1
    return "".join(chars)


def reformat(text):
    """Upper-case titles and re-wrap at 50 columns with Windows line ends:
    identical after simlsh-dedup's default normalisation (lower,space)."""
    paras = text.strip("\n").split("\n\n")
    paras = [paras[0].upper()] + [wrap(p.replace("\n", " "), 50) for p in paras[1:]]
    return "\r\n\r\n".join(p.replace("\n", "\r\n") for p in paras) + "\r\n"


def shingles(text, k=5):
    t = re.sub(r"\s+", " ", text.lower()).strip()
    if len(t) < k:
        return {t} if t else set()
    return {t[i:i + k] for i in range(len(t) - k + 1)}


def jaccard(a, b):
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "sample")
    rng = random.Random(SEED)
    files = {}
    themes = sorted(THEMES)

    # Distinct documents: notes-01 .. notes-44, themes in rotation.
    for i in range(1, 45):
        theme = themes[i % len(themes)]
        title = "Notes %02d: the %s" % (i, THEMES[theme][i % len(THEMES[theme])])
        files["notes-%02d.txt" % i] = document(rng, theme, title)

    # 1. Near copies with a few words changed and with typos.
    base = document(rng, "harbour", "Harbour log, third week", 5)
    files["harbour-log.txt"] = base
    files["harbour-log-edited.txt"] = edit_words(rng, base, 3)
    files["harbour-log-typos.txt"] = typos(rng, base, 4)

    # 2. Exact copies, one of them in a subdirectory.
    base = document(rng, "city", "Minutes of the council meeting", 4)
    files["council-minutes.txt"] = base
    files["archive/council-minutes.txt"] = base
    files["archive/council-minutes-backup.txt"] = base

    # 3. Same text, different case, wrapping and line ends.
    base = document(rng, "software", "Release plan for version two", 4)
    files["release-plan.txt"] = base
    files["release-plan-reformatted.txt"] = reformat(base)

    # 4. A report and the same report with one sentence appended.
    base = document(rng, "science", "Field report from the northern station", 5)
    files["field-report.txt"] = base
    files["field-report-extended.txt"] = base + "\n" + sentence(rng, "science") + "\n"

    # 5. A near miss: half the paragraphs rewritten. Similar, but well below
    #    the default threshold of 0.8, so it must NOT be reported.
    base = document(rng, "garden", "Garden diary, May", 4)
    paras = base.split("\n\n")
    half = document(rng, "garden", "x", 2).split("\n\n")[1:]
    files["garden-diary.txt"] = base
    files["garden-diary-rewritten.txt"] = "\n\n".join(paras[:3] + half) + "\n"

    for name, text in files.items():
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    planted = [
        ("harbour-log.txt", "harbour-log-edited.txt"),
        ("harbour-log.txt", "harbour-log-typos.txt"),
        ("harbour-log-edited.txt", "harbour-log-typos.txt"),
        ("council-minutes.txt", "archive/council-minutes.txt"),
        ("release-plan.txt", "release-plan-reformatted.txt"),
        ("field-report.txt", "field-report-extended.txt"),
        ("garden-diary.txt", "garden-diary-rewritten.txt"),
    ]
    for a, b in planted:
        print("%-28s %-32s J = %.3f" % (a, b, jaccard(files[a], files[b])))
    names = sorted(n for n in files if n.startswith("notes-"))
    worst = max((jaccard(files[a], files[b]), a, b)
                for i, a in enumerate(names) for b in names[i + 1:])
    print("most similar distinct pair: %s %s J = %.3f" % (worst[1], worst[2], worst[0]))
    print("%d files, %d bytes" % (len(files), sum(len(t.encode()) for t in files.values())))


if __name__ == "__main__":
    main()
