#!/usr/bin/env python3
"""Generate the offline DeepSearchQA source: a fictional multi-hop corpus and its questions.

Why a generated world: the real DeepSearchQA needs the open web, which tests and offline demos
do not have. A fictional world (coined names only, so no model can know the answers from
pre-training) lets the search agent loop be exercised end to end, and because every fact lives
in exactly one document and the documents link to one another in one direction only, each
question needs at least two searches: the document that names the question's entity never holds
the answer.

The world: towns (region, river, landmarks), people (birthplace, a town they studied in,
profession), companies (founder, headquarters town, founding year, products) and rivers (the
towns they flow through). Links: company -> founder, company -> headquarters town,
person -> birthplace / study town, town -> river, river -> towns.

Question templates (answer type; hops):
- founder_birthplace  (Single; company -> founder -> birthplace)
- hq_river            (Single; company -> headquarters town -> river)
- founder_birth_river (Single; company -> founder -> birthplace -> river)
- birthplace_landmarks (Set; person -> birthplace -> its landmarks)
- products_of_native  (Set; town -> the person born there -> the company they founded -> products)
- hq_companies        (Set; every company headquartered in a town: one document per item)

Two worlds, drawn independently:
- the train world (shipped in `data/`): everything drawn from `random.Random(SEED)` (its
  algorithms are stable across Python 3 versions), so the files are byte-identical on every
  run; all of its questions are train-visible. `--check` regenerates it in memory and fails if
  the shipped files differ (a test runs it).
- the held-out world (`heldout_world(seed)`): a second world of the same shape from the
  installation's secret seed, never written into the package. Its names are coined apart
  from the train world's (no held-out name equals or contains a train name), its documents are
  searched only when held-out episodes are evaluated, and its questions are a seeded sample of
  N_HELDOUT. Nothing about it can be read or inferred from the train world: it is not the
  complement of the train questions, and without the seed the names are unknown.

Usage: python -m a2rl.tasks.deepsearchqa.make_data [--check] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20251
"""Seeds the train world (the shipped corpus and its questions)."""
N_TOWNS = 36
N_PEOPLE = 36
"""One person born in each town (so "the person born in X" is unique)."""
N_COMPANIES = 36
"""One company per person (so "the company founded by X" is unique)."""
N_RIVERS = 9
N_HQ_TOWNS = 14
"""Companies are headquartered in the first N_HQ_TOWNS towns only, so several towns host more
than one company (the `hq_companies` set questions need at least two)."""
N_HELDOUT = 60
"""Held-out questions, sampled from the held-out world's questions."""

OUT = Path(__file__).resolve().parent / "data"
SINGLE, SET = "Single Answer", "Set Answer"

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "tr", "st",
           "th", "h", "c", "w"]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ia", "ei"]
_CODAS = ["", "", "", "", "", "n", "r", "l", "s", "m", "nd"]
_TOWN_SUFFIXES = ["", "", "mere", "holt", "wick", "ford", "stead", "by"]
_REGIONS_N = 6
_PROFESSIONS = ["clockmaker", "chemist", "engineer", "glassblower", "cartographer", "printer", "weaver",
                "metallurgist"]
_LANDMARK_KINDS = ["Bridge", "Abbey", "Tower", "Gate", "Library", "Market Hall", "Lighthouse", "Observatory",
                   "Fountain", "Theatre"]
_SECTORS = {
    "Instruments": ("scientific instruments",
                    ["barometer", "sextant", "chronometer", "theodolite", "compass"]),
    "Optics": ("optical goods", ["lens", "telescope", "microscope", "periscope", "prism"]),
    "Foundry": ("cast-iron goods", ["bell", "anvil", "kettle", "stove", "cauldron"]),
    "Textiles": ("woven goods", ["loom", "shawl", "carpet", "canvas", "tapestry"]),
    "Works": ("machinery", ["lantern", "pump", "lock", "valve", "winch"]),
}


class Names:
    """Coined, unique words. No word is a substring of another, so a name found in a document
    (or in an answer) is never a fragment of some other entity's name."""

    def __init__(self, rng: random.Random, reserved: Sequence[str] = ()) -> None:
        self.rng = rng
        self.used: list[str] = []
        self._reserved = [r.lower() for r in reserved]
        """Words of another world this one must not reuse or overlap."""

    def word(self, min_syl: int = 2, max_syl: int = 3) -> str:
        for _ in range(10_000):
            n = self.rng.randint(min_syl, max_syl)
            w = "".join(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS)
                        for _ in range(n))
            w = w.capitalize()
            if not 5 <= len(w) <= 10:
                continue
            low = w.lower()
            if any(low in u.lower() or u.lower() in low for u in self.used) or \
                    any(low in r or r in low for r in self._reserved):
                continue
            self.used.append(w)
            return w
        raise RuntimeError("ran out of names")


@dataclass
class Town:
    name: str
    region: str
    river: str = ""
    population: int = 0
    landmarks: list[str] = field(default_factory=list)


@dataclass
class Person:
    name: str
    born_in: str
    studied_in: str
    birth_year: int
    profession: str


@dataclass
class Company:
    name: str
    sector: str
    founder: str
    hq: str
    year: int
    products: list[str]


def doc_id(kind: str, i: int) -> str:
    return f"{kind}-{i:03d}"


def _join(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def build_world(rng: random.Random, names: Names | None = None
                ) -> tuple[list[Town], list[Person], list[Company], dict[str, list[str]]]:
    names = names or Names(rng)
    regions = [names.word(2, 2) for _ in range(_REGIONS_N)]
    rivers = [f"{names.word(2, 3)} River" for _ in range(N_RIVERS)]
    towns = []
    for _ in range(N_TOWNS):
        base = names.word(2, 2)
        towns.append(Town(name=base + rng.choice(_TOWN_SUFFIXES), region=rng.choice(regions)))
    river_towns: dict[str, list[str]] = {r: [] for r in rivers}
    for i, t in enumerate(towns):
        t.river = rivers[i % N_RIVERS] if i < N_RIVERS else rng.choice(rivers)  # every river used
        river_towns[t.river].append(t.name)
        t.population = rng.randrange(1_200, 95_000, 10)
        kinds = rng.sample(_LANDMARK_KINDS, 3)
        t.landmarks = [f"{names.word(2, 3)} {k}" for k in kinds]
    births = list(range(N_TOWNS))
    rng.shuffle(births)
    people = []
    for i in range(N_PEOPLE):
        born = towns[births[i]].name
        studied = rng.choice([t.name for t in towns if t.name != born])
        people.append(Person(name=f"{names.word(2, 2)} {names.word(2, 3)}", born_in=born, studied_in=studied,
                             birth_year=rng.randint(1801, 1899), profession=rng.choice(_PROFESSIONS)))
    founders = list(range(N_PEOPLE))
    rng.shuffle(founders)
    companies = []
    for i in range(N_COMPANIES):
        person = people[founders[i]]
        sector = rng.choice(sorted(_SECTORS))
        # headquarters never in the founder's birthplace: the company document must not name
        # the town a founder_birthplace question asks for
        hq = rng.choice([t.name for t in towns[:N_HQ_TOWNS] if t.name != person.born_in])
        nouns = rng.sample(_SECTORS[sector][1], 3)
        companies.append(Company(name=f"{names.word(2, 3)} {sector}", sector=sector, founder=person.name,
                                 hq=hq, year=person.birth_year + rng.randint(22, 45),
                                 products=[f"{names.word(2, 3)} {n}" for n in nouns]))
    return towns, people, companies, river_towns


def documents(rng: random.Random, towns: list[Town], people: list[Person], companies: list[Company],
              river_towns: dict[str, list[str]]) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The corpus (one document per entity) and entity name -> document id."""
    docs: list[dict[str, str]] = []
    ids: dict[str, str] = {}
    for i, t in enumerate(towns):
        ids[t.name] = doc_id("town", i)
        opening = rng.choice([f"{t.name} is a town in the {t.region} region.",
                              f"{t.name} is a small town of the {t.region} region."])
        text = (f"{opening} The {t.river} flows through {t.name}. It has a population of about "
                f"{t.population:,}. The notable landmarks of {t.name} are the {_join(t.landmarks)}.")
        docs.append({"id": ids[t.name], "title": t.name, "text": text})
    for i, p in enumerate(people):
        ids[p.name] = doc_id("person", i)
        last = p.name.split()[-1]
        text = (f"{p.name} (born {p.birth_year}) was a {p.profession}. {last} was born in {p.born_in} and "
                f"later studied in {p.studied_in}. "
                + rng.choice([f"{last} is remembered for careful work and many apprentices.",
                              f"Contemporaries described {last} as patient and inventive."]))
        docs.append({"id": ids[p.name], "title": p.name, "text": text})
    for i, c in enumerate(companies):
        ids[c.name] = doc_id("company", i)
        goods = _SECTORS[c.sector][0]
        text = (f"{c.name} is a maker of {goods}, founded in {c.year} by {c.founder}. Its headquarters are "
                f"in {c.hq}. Its products are the {_join(c.products)}.")
        docs.append({"id": ids[c.name], "title": c.name, "text": text})
    for i, (river, through) in enumerate(river_towns.items()):
        ids[river] = doc_id("river", i)
        text = f"The {river} flows through the towns of {_join(through)}." if len(through) > 1 else \
            f"The {river} flows through the town of {through[0]}."
        docs.append({"id": ids[river], "title": f"The {river}", "text": text})
    return docs, ids


def questions(towns: list[Town], people: list[Person], companies: list[Company],
              ids: dict[str, str]) -> list[dict[str, object]]:
    town = {t.name: t for t in towns}
    person = {p.name: p for p in people}
    by_birth = {p.born_in: p for p in people}
    by_founder = {c.founder: c for c in companies}
    out: list[dict[str, object]] = []

    def add(template: str, question: str, items: list[str], answer_type: str, anchor: str,
            support: list[str]) -> None:
        out.append({"template": template, "question": question, "answer_type": answer_type,
                    "answer": ", ".join(items), "answer_items": items, "anchor": anchor,
                    "support": [ids[s] for s in support], "hops": len(support)})

    for c in companies:
        f = person[c.founder]
        add("founder_birthplace", f"In which town was the founder of {c.name} born?", [f.born_in], SINGLE,
            c.name, [c.name, f.name])
        add("hq_river", f"Which river flows through the town where {c.name} has its headquarters?",
            [town[c.hq].river], SINGLE, c.name, [c.name, c.hq])
        add("founder_birth_river", f"Which river flows through the birthplace of the founder of {c.name}?",
            [town[f.born_in].river], SINGLE, c.name, [c.name, f.name, f.born_in])
    for p in people:
        add("birthplace_landmarks", f"What are the notable landmarks of the town where {p.name} was born?",
            town[p.born_in].landmarks, SET, p.name, [p.name, p.born_in])
    for t in towns:
        native = by_birth[t.name]
        firm = by_founder[native.name]
        add("products_of_native", f"What products make up the range of the company founded by the person "
            f"who was born in {t.name}?", firm.products, SET, t.name, [native.name, firm.name])
        hosted = [c.name for c in companies if c.hq == t.name]
        if len(hosted) >= 2:
            add("hq_companies", f"Which companies have their headquarters in {t.name}?", hosted, SET, t.name,
                hosted)
    return out


def _jsonl(items: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in items)


def _world(seed: int, reserved: Sequence[str] = ()
           ) -> tuple[list[dict[str, str]], list[dict[str, object]], Names]:
    """(documents sorted by id, questions, the names coined) of the world of one seed."""
    rng = random.Random(seed)
    names = Names(rng, reserved)
    towns, people, companies, river_towns = build_world(rng, names)
    docs, ids = documents(rng, towns, people, companies, river_towns)
    qs = questions(towns, people, companies, ids)
    rng.shuffle(qs)
    return sorted(docs, key=lambda d: d["id"]), qs, names


def generate() -> dict[str, str]:
    """The shipped train world: file name -> exact file content."""
    docs, qs, _names = _world(SEED)
    qs.sort(key=lambda q: (str(q["template"]), str(q["question"])))
    rows = [{"id": f"offline-t{i:03d}", **q, "split": "train"} for i, q in enumerate(qs)]
    meta = {"seed": SEED, "generator": "a2rl.tasks.deepsearchqa.make_data", "n_documents": len(docs),
            "n_train": len(rows), "heldout": f"{N_HELDOUT} questions of a separate world generated "
                                             "from the installation's secret seed (heldout_world)"}
    return {"corpus.jsonl": _jsonl(docs),
            "questions.jsonl": _jsonl(rows),
            "meta.json": json.dumps(meta, indent=2, sort_keys=True) + "\n"}


def heldout_world(seed: int) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    """(documents, held-out questions) of the held-out world of `seed` (the installation's
    secret seed), generated in memory where held-out episodes are evaluated."""
    if seed == SEED:
        raise ValueError(f"the held-out seed must differ from the train world's seed {SEED}")
    _docs, _qs, train_names = _world(SEED)
    docs, qs, _names = _world(seed, reserved=train_names.used)
    rng = random.Random(f"heldout-sample:{seed}")
    picked = sorted(rng.sample(range(len(qs)), min(N_HELDOUT, len(qs))))
    rows = [{"id": f"offline-h{i:03d}", **qs[k], "split": "heldout"} for i, k in enumerate(picked)]
    return docs, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    files = generate()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (args.out / n).exists() or (args.out / n).read_text(encoding="utf-8") != text]
        if stale:
            print(f"out of date: {', '.join(stale)} (run python -m a2rl.tasks.deepsearchqa.make_data)",
                  file=sys.stderr)
            return 1
        print("up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (args.out / n).write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(files)} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
