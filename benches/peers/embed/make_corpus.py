#!/usr/bin/env python3
"""Writes corpus.txt, the bulk input of the sentence-embedding benchmark: 1,100 English sentences.

The sentences are generated, not downloaded: a small grammar (topic word lists, clause frames,
connectives) driven by a seeded splitmix64 generator, so the same script always writes the same
file. Verbs are only used in forms that need no agreement (past tense, or after a modal), so every
sentence is grammatical. Lengths follow a mix of short queries, medium statements and long
compound sentences, with an average near 22.5 tokens of all-MiniLM-L6-v2's tokenizer ([CLS] and
[SEP] included), as in the corpus described in issue 34.

    python3 benches/peers/embed/make_corpus.py            # rewrites corpus.txt next to this file
    python3 benches/peers/embed/make_corpus.py --check    # only verifies corpus.txt is up to date

Standard library only. `../ort_embed.py` prints the token counts of both inputs.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SENTENCES = 1100
SEED = 0x5EED_34

M64 = (1 << 64) - 1


class Rng:
    """splitmix64: fixed output whatever the Python version (unlike `random`'s helpers)."""

    def __init__(self, seed: int):
        self.state = seed & M64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def pick(self, items):
        return items[self.below(len(items))]

    def chance(self, percent: int) -> bool:
        return self.below(100) < percent


# Each topic: who acts, what they do (past tense, base form, object), where, when, describing
# words, and things one asks about. Objects carry their article.
TOPICS = {
    "travel": dict(
        who=["the tour guide", "our driver", "a group of students", "the airline", "my sister", "the hotel staff",
             "two hikers", "the ferry crew", "a family from Canada", "the station manager"],
        do=[("booked", "book", "a room with a view of the harbour"), ("cancelled", "cancel", "the evening ferry"),
            ("missed", "miss", "the last train to the coast"), ("rented", "rent", "a small car at the airport"),
            ("visited", "visit", "the old fortress above the town"), ("changed", "change", "the route after the storm"),
            ("found", "find", "a cheaper flight through a friend"), ("packed", "pack", "a map and two bottles of water"),
            ("crossed", "cross", "the mountain pass before sunset"), ("lost", "lose", "a passport at the border")],
        where=["at the airport", "on the coast road", "near the harbour", "in the old town", "at the border",
               "on the night train", "in a mountain village", "outside the main station"],
        what=["flight", "ticket", "hotel", "visa", "luggage allowance", "train pass", "ferry timetable", "travel insurance"],
        adj=["crowded", "delayed", "cheap", "comfortable", "quiet", "expensive", "scenic"],
    ),
    "cooking": dict(
        who=["the chef", "my grandmother", "the baker", "our neighbour", "the kitchen team", "a young cook",
             "the restaurant owner", "my flatmate"],
        do=[("baked", "bake", "a loaf of sourdough bread"), ("chopped", "chop", "the onions and garlic"),
            ("roasted", "roast", "a tray of root vegetables"), ("simmered", "simmer", "the tomato sauce for an hour"),
            ("tasted", "taste", "the soup before serving it"), ("burned", "burn", "the rice at the bottom of the pan"),
            ("whisked", "whisk", "the eggs with a little milk"), ("served", "serve", "the fish with lemon and capers"),
            ("prepared", "prepare", "a salad of beans and fresh herbs"), ("froze", "freeze", "the leftover stew")],
        where=["in the kitchen", "at the market", "in a cast iron pan", "on a low heat", "in the oven",
               "at the bakery", "on the barbecue"],
        what=["recipe", "oven", "sauce", "dough", "spice mix", "knife", "pastry", "marinade"],
        adj=["crispy", "salty", "tender", "bitter", "fresh", "sweet", "spicy"],
    ),
    "science": dict(
        who=["the researchers", "a team of astronomers", "the laboratory", "a biologist", "the physicists",
             "the survey", "a graduate student", "the climate scientists"],
        do=[("measured", "measure", "the temperature of the deep ocean"),
            ("observed", "observe", "a faint signal from a distant galaxy"),
            ("sequenced", "sequence", "the genome of a rare orchid"), ("tested", "test", "a new vaccine on mice"),
            ("published", "publish", "their results in a journal"), ("collected", "collect", "samples of ice from the glacier"),
            ("recorded", "record", "the songs of humpback whales"), ("modelled", "model", "the spread of the disease"),
            ("confirmed", "confirm", "the age of the fossil"), ("detected", "detect", "traces of water in the soil")],
        where=["in the laboratory", "at the research station", "in the Antarctic", "under the microscope",
               "at the observatory", "in the field", "on the ocean floor"],
        what=["experiment", "hypothesis", "telescope", "data set", "sample", "theory", "measurement"],
        adj=["surprising", "precise", "rare", "unexpected", "reliable", "controversial", "preliminary"],
    ),
    "technology": dict(
        who=["the developers", "our support team", "the administrator", "a security researcher", "the company",
             "the engineers", "my colleague", "the open source project"],
        do=[("released", "release", "a new version of the app"), ("fixed", "fix", "the bug in the login page"),
            ("updated", "update", "the drivers on every laptop"), ("restarted", "restart", "the database server"),
            ("deleted", "delete", "the old backups"), ("installed", "install", "the latest security patch"),
            ("tested", "test", "the payment system on older phones"), ("moved", "move", "the website to a new host"),
            ("reported", "report", "a flaw in the encryption library"), ("replaced", "replace", "the broken hard drive")],
        where=["on the server", "in the settings menu", "on older phones", "in the cloud", "on the company network",
               "in the browser", "at the data centre"],
        what=["password", "laptop", "printer", "update", "router", "account", "keyboard", "backup"],
        adj=["slow", "reliable", "broken", "secure", "outdated", "fast", "compatible"],
    ),
    "health": dict(
        who=["the doctor", "the nurse", "my father", "the patients", "a physiotherapist", "the clinic",
             "the pharmacist", "my running partner"],
        do=[("prescribed", "prescribe", "a short course of antibiotics"), ("checked", "check", "my blood pressure"),
            ("recommended", "recommend", "more sleep and less coffee"), ("treated", "treat", "the sprained ankle"),
            ("measured", "measure", "the child's temperature"), ("avoided", "avoid", "sugar for a month"),
            ("started", "start", "a gentle exercise programme"), ("booked", "book", "an appointment for next week"),
            ("reduced", "reduce", "the dose of the medicine"), ("drank", "drink", "more water during the day")],
        where=["at the clinic", "in the waiting room", "at the pharmacy", "at the gym", "in the hospital",
               "at home"],
        what=["headache", "vaccine", "allergy", "diet", "back pain", "prescription", "blood test", "fever"],
        adj=["painful", "healthy", "tired", "mild", "serious", "common", "effective"],
    ),
    "finance": dict(
        who=["the central bank", "investors", "the small business", "my accountant", "the government",
             "the shareholders", "a local bakery", "the insurance company"],
        do=[("raised", "raise", "interest rates by a quarter of a point"), ("cut", "cut", "its budget for next year"),
            ("paid", "pay", "the invoice two weeks late"), ("borrowed", "borrow", "money to buy new equipment"),
            ("sold", "sell", "their shares before the crash"), ("saved", "save", "part of every salary"),
            ("reported", "report", "higher profits than expected"), ("invested", "invest", "in renewable energy"),
            ("lowered", "lower", "the price of its products"), ("filed", "file", "the tax return on time")],
        where=["in the first quarter", "on the stock market", "at the bank", "in the annual report",
               "across the region", "in the city centre"],
        what=["mortgage", "loan", "savings account", "pension", "tax return", "budget", "credit card", "salary"],
        adj=["profitable", "risky", "stable", "expensive", "cheap", "volatile", "modest"],
    ),
    "sports": dict(
        who=["the home team", "the coach", "the goalkeeper", "a young striker", "the cyclists", "the referee",
             "the fans", "the marathon runners"],
        do=[("won", "win", "the final on penalties"), ("lost", "lose", "the match in the last minute"),
            ("trained", "train", "twice a day before the season"), ("scored", "score", "a goal from a free kick"),
            ("signed", "sign", "a new contract"), ("broke", "break", "the national record"),
            ("missed", "miss", "the race with a knee injury"), ("climbed", "climb", "the steepest hill of the tour"),
            ("celebrated", "celebrate", "the title with the supporters"), ("changed", "change", "the tactics at half time")],
        where=["at the stadium", "on the final lap", "in the second half", "at the training ground",
               "on home soil", "in the rain"],
        what=["match", "season", "tournament", "injury", "transfer", "league table", "race"],
        adj=["exciting", "tight", "disappointing", "historic", "physical", "close", "brilliant"],
    ),
    "home": dict(
        who=["my neighbour", "the landlord", "the plumber", "our children", "the gardener", "my partner",
             "the builders", "the cleaning company"],
        do=[("painted", "paint", "the kitchen walls"), ("repaired", "repair", "the leaking roof"),
            ("planted", "plant", "tomatoes along the fence"), ("fixed", "fix", "the dripping tap"),
            ("moved", "move", "the sofa into the living room"), ("cleaned", "clean", "the windows on both floors"),
            ("replaced", "replace", "the old boiler"), ("built", "build", "a shed at the bottom of the garden"),
            ("ordered", "order", "a new washing machine"), ("cut", "cut", "the hedge before the winter")],
        where=["in the garden", "in the attic", "in the basement", "on the balcony", "in the hallway",
               "in the spare bedroom"],
        what=["heating", "rent", "fridge", "garden", "furniture", "lease", "washing machine", "roof"],
        adj=["damp", "cosy", "noisy", "spacious", "cold", "bright", "old"],
    ),
    "education": dict(
        who=["the teacher", "the students", "the university", "my son", "the head of the school", "a tutor",
             "the exam board", "our class"],
        do=[("marked", "mark", "the essays over the weekend"), ("passed", "pass", "the final exam"),
            ("studied", "study", "history and economics"), ("opened", "open", "a new science building"),
            ("wrote", "write", "a report on the French revolution"), ("read", "read", "three novels in a month"),
            ("learned", "learn", "the basics of programming"), ("organised", "organise", "a trip to the museum"),
            ("failed", "fail", "the driving test twice"), ("answered", "answer", "every question in the quiz")],
        where=["in the classroom", "at the library", "during the lecture", "in the school hall", "on the campus",
               "at the summer school"],
        what=["exam", "course", "scholarship", "homework", "timetable", "degree", "lesson", "thesis"],
        adj=["difficult", "useful", "boring", "interesting", "demanding", "short", "popular"],
    ),
    "nature": dict(
        who=["the rangers", "a family of foxes", "the volunteers", "the farmers", "a flock of geese",
             "the local council", "the fishermen", "a photographer"],
        do=[("spotted", "spot", "a rare eagle above the valley"), ("planted", "plant", "a thousand young oaks"),
            ("cleared", "clear", "the rubbish from the beach"), ("protected", "protect", "the nesting sites"),
            ("counted", "count", "the birds on the lake"), ("harvested", "harvest", "the apples early this year"),
            ("followed", "follow", "the river to its source"), ("caught", "catch", "a large trout"),
            ("watched", "watch", "the storm roll in from the sea"), ("fenced", "fence", "the meadow against deer")],
        where=["in the forest", "along the river", "on the cliffs", "in the national park", "near the lake",
               "across the valley", "on the island"],
        what=["weather", "drought", "flood", "wildlife", "forest fire", "harvest", "storm"],
        adj=["wild", "dry", "green", "stormy", "peaceful", "endangered", "beautiful"],
    ),
}

WHEN = ["yesterday", "last week", "this morning", "in 2019", "after the holidays", "on Monday", "last spring",
        "two years ago", "at the weekend", "in the end", "earlier this month", "after a long delay"]
LINKS = [", and", ", but", " because", " although", " while", " so", ", which meant that", " after",
         " before", ", even though", " until"]
OPENERS = ["According to the report,", "In the end,", "As expected,", "For the first time,", "Surprisingly,",
           "Despite the rain,", "After a long discussion,", "Meanwhile,", "In other news,", "To everyone's relief,"]
# After a modal ("will fix"), "after"/"before"/"until" would need another tense.
MODAL_LINKS = [", and", ", but", " because", " although", " while", " so", ", even though"]
MODALS = ["should", "can", "could", "might", "will", "would", "must"]
QUESTION_FRAMES = [
    "How do I {base} {obj}?", "Why did {who} {base} {obj}?", "Where can I {base} {obj}?",
    "Is it worth it to {base} {obj} {where}?", "What is the best {what} for a beginner?",
    "How much does a {adj} {what} cost {where}?", "Can someone explain how a {what} works?",
    "When should I {base} {obj}?", "Which {what} would you recommend?", "Is my {what} too {adj}?",
]
SHORT_FRAMES = [
    "The {what} is {adj}.", "{Who} {past} {obj}.", "Nobody liked the {what}.", "A {adj} {what}, as always.",
    "Check the {what} first.", "{Who} {past} {obj} {when}.", "That {what} looks {adj}.",
]


def cap(s: str) -> str:
    return s[0].upper() + s[1:]


def clause(r: Rng, t: dict, tense: str) -> str:
    who = r.pick(t["who"])
    past, base, obj = r.pick(t["do"])
    verb = past if tense == "past" else f"{r.pick(MODALS)} {base}"
    parts = [who, verb, obj]
    if r.chance(45):
        parts.append(r.pick(t["where"]))
    if tense == "past" and r.chance(30):  # the time words are past ones
        parts.append(r.pick(WHEN))
    return " ".join(parts)


def sentence(r: Rng, target_words: int) -> str:
    t = TOPICS[r.pick(sorted(TOPICS))]
    fill = dict(base=None)
    if target_words <= 7:
        past, base, obj = r.pick(t["do"])
        fill = dict(what=r.pick(t["what"]), adj=r.pick(t["adj"]), Who=cap(r.pick(t["who"])), past=past,
                    obj=obj, when=r.pick(WHEN))
        return r.pick(SHORT_FRAMES).format(**fill)
    if r.chance(18) and target_words <= 16:
        past, base, obj = r.pick(t["do"])
        fill = dict(base=base, obj=obj, who=r.pick(t["who"]), where=r.pick(t["where"]), what=r.pick(t["what"]),
                    adj=r.pick(t["adj"]))
        return r.pick(QUESTION_FRAMES).format(**fill)
    tense = "past" if r.chance(70) else "modal"
    text = clause(r, t, tense)
    if r.chance(25):
        opener = r.pick(OPENERS)
        text = f"{opener} {text}"
    while len(text.split()) < target_words:
        # Mostly the same topic, sometimes another one, as in running text; one tense throughout.
        t2 = t if r.chance(85) else TOPICS[r.pick(sorted(TOPICS))]
        link = r.pick(LINKS if tense == "past" else MODAL_LINKS)
        text += f"{link} {clause(r, t2, tense)}"
    return cap(text) + "."


def target_length(r: Rng) -> int:
    """Words per sentence: a quarter short (3-8), 60% medium (9-20), the rest long (21-40)."""
    u = r.below(100)
    if u < 25:
        return 3 + r.below(6)
    if u < 85:
        return 9 + r.below(12)
    return 21 + r.below(20)


def corpus() -> list[str]:
    """SENTENCES distinct sentences (a repeated one is drawn again)."""
    r = Rng(SEED)
    out, seen = [], set()
    while len(out) < SENTENCES:
        s = sentence(r, target_length(r))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if corpus.txt differs from what this script writes")
    ap.add_argument("--out", default=os.path.join(HERE, "corpus.txt"))
    args = ap.parse_args()
    text = "\n".join(corpus()) + "\n"
    if args.check:
        with open(args.out, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{args.out} is not what make_corpus.py writes; rerun it", file=sys.stderr)
                return 1
        print(f"{args.out} is up to date")
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {SENTENCES} sentences to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
