"""Generate the offline WebShop catalog and train goals shipped with a2rl (deterministic).

    python -m a2rl.tasks.webshop.make_data [--out src/a2rl/tasks/webshop/data]

Writes, in WebShop's own formats (see catalog.py beside this module):
items_shuffle.json (products), items_ins_v2.json (attributes), reviews.json and goals_train.json;
and title_nouns.json, spaCy's nouns of every product title (needs spaCy with en_core_web_sm: the
reward reads this table when spaCy is not installed, so the offline catalog scores like WebShop
either way).
30 product types in WebShop's five categories, 10 products each: products of one type share the
query and category path and differ in brand, attributes, options and price, so an agent has to
read titles, features and options to pick the right one. Held-out goals are not written here:
the task draws them at run time from a secret seed with the same goal generator.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path
from typing import Any

from a2rl.tasks.webshop.catalog import (
    ATTRIBUTES_FILE,
    DATA_DIR,
    PRODUCTS_FILE,
    REVIEWS_FILE,
    TRAIN_GOALS_FILE,
    Catalog,
    generate_goals,
)
from a2rl.tasks.webshop.reward import NOUN_TABLE_FILE, spacy_title_nouns

SEED = 2022
TRAIN_GOAL_SEED = 1
PRODUCTS_PER_TYPE = 10
N_TRAIN_GOALS = 600

COLORS = ["Black", "White", "Grey", "Navy Blue", "Pink", "Beige", "Olive Green", "Burgundy", "Khaki",
          "Charcoal", "Light Blue", "Brown"]

# category, query (the product type as shoppers name it), category path, title noun variants (they
# share a head noun, so WebShop's title-noun type check sees products of one kind as alike), title
# suffixes, attribute pool, options {name: pool}, price range (dollars)
TYPES: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- beauty
    dict(category="beauty", query="shampoo",
         path="Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
         nouns=["Shampoo", "Hair Shampoo", "Daily Shampoo"],
         suffixes=["for All Hair Types", "for Women and Men", "with Natural Extracts"],
         attrs=["sulfate free", "paraben free", "tea tree", "argan oil", "dry hair", "color safe",
                "cruelty free", "natural ingredients"],
         options={"Size": ["8.4 Fl Oz (Pack of 1)", "16.9 Fl Oz (Pack of 1)", "8.4 Fl Oz (Pack of 2)",
                           "33.8 Fl Oz"],
                  "Scent": ["Lavender", "Coconut", "Citrus", "Unscented", "Peppermint"]},
         price=(6, 34)),
    dict(category="beauty", query="face moisturizer",
         path="Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers › Face Moisturizers",
         nouns=["Face Moisturizer", "Face Moisturizer Cream", "Daily Face Moisturizer"],
         suffixes=["for Women and Men", "for Day and Night", "with Hyaluronic Acid"],
         attrs=["hyaluronic acid", "sensitive skin", "fragrance free", "oil free", "spf 30",
                "non comedogenic", "dermatologist tested", "vitamin c"],
         options={"Size": ["1.7 Fl Oz", "2.5 Fl Oz", "3.4 Fl Oz"]},
         price=(9, 48)),
    dict(category="beauty", query="lipstick",
         path="Beauty & Personal Care › Makeup › Lips › Lipstick",
         nouns=["Lipstick", "Matte Lipstick", "Satin Lipstick"],
         suffixes=["for Women", "Lip Makeup", "Full Coverage Lip Color"],
         attrs=["long lasting", "matte finish", "cruelty free", "moisturizing formula", "waterproof",
                "vitamin e", "highly pigmented"],
         options={"Color": ["Ruby Red", "Nude Pink", "Berry", "Coral", "Mauve", "Classic Red",
                            "Plum"]},
         price=(5, 26)),
    dict(category="beauty", query="deodorant",
         path="Beauty & Personal Care › Personal Care › Deodorants & Antiperspirants › Deodorants",
         nouns=["Deodorant", "Natural Deodorant", "Deodorant Stick"],
         suffixes=["for Women and Men", "for All Day Freshness", "Travel Friendly"],
         attrs=["aluminum free", "sensitive skin", "natural ingredients", "baking soda free",
                "long lasting", "travel size", "paraben free"],
         options={"Scent": ["Bright Citrus", "Lavender", "Unscented", "Cedarwood", "Eucalyptus"],
                  "Size": ["2.6 Ounce", "3 Ounce (Pack of 1)", "3 Ounce (Pack of 2)"]},
         price=(5, 24)),
    dict(category="beauty", query="nail polish",
         path="Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
         nouns=["Nail Polish", "Nail Lacquer", "Gel Nail Polish"],
         suffixes=["Salon Quality", "for Home Manicure", "0.5 Fl Oz"],
         attrs=["quick dry", "long lasting", "non toxic", "gel finish", "chip resistant",
                "high shine", "vegan formula"],
         options={"Color": ["Ruby Red", "Nude", "Baby Pink", "Navy Blue", "Lilac", "Black",
                            "Coral"]},
         price=(4, 18)),
    dict(category="beauty", query="hair dryer",
         path="Beauty & Personal Care › Hair Care › Styling Tools & Appliances › Hair Dryers",
         nouns=["Hair Dryer", "Ionic Hair Dryer", "Blow Dryer"],
         suffixes=["with Diffuser", "1875W", "for Travel and Home"],
         attrs=["ionic technology", "fast drying", "low noise", "diffuser attachment",
                "foldable handle", "heat settings", "cool shot button"],
         options={"Color": ["Black", "White", "Rose Gold", "Purple"]},
         price=(18, 95)),
    # ---------------------------------------------------------------- food
    dict(category="food", query="dark chocolate bar",
         path="Grocery & Gourmet Food › Snacks & Sweets › Chocolate › Chocolate Bars",
         nouns=["Dark Chocolate Bar", "Dark Chocolate Bars", "Chocolate Bar"],
         suffixes=["70% Cocoa", "Gourmet Snack", "Individually Wrapped"],
         attrs=["gluten free", "dairy free", "fair trade", "organic", "low sugar", "non gmo",
                "vegan"],
         options={"Flavor": ["Sea Salt", "Almond", "Orange", "Mint", "Raspberry"],
                  "Size": ["3.5 Ounce (Pack of 4)", "3.5 Ounce (Pack of 12)", "1.4 Ounce (Pack of 10)"]},
         price=(6, 45)),
    dict(category="food", query="ground coffee",
         path="Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee › Ground Coffee",
         nouns=["Ground Coffee", "Coffee Ground", "Whole Bean Ground Coffee"],
         suffixes=["Bag", "Arabica Coffee", "Rich and Smooth"],
         attrs=["medium roast", "dark roast", "organic", "fair trade", "decaf", "single origin",
                "low acid"],
         options={"Flavor": ["French Vanilla", "Hazelnut", "Original", "Caramel"],
                  "Size": ["12 Ounce", "24 Ounce", "2 Pound"]},
         price=(7, 38)),
    dict(category="food", query="protein bars",
         path="Grocery & Gourmet Food › Snacks & Sweets › Bars › Protein Bars",
         nouns=["Protein Bars", "Protein Snack Bars", "High Protein Bars"],
         suffixes=["Healthy Snack", "20g Protein", "Meal Replacement"],
         attrs=["high protein", "gluten free", "low sugar", "keto friendly", "plant based",
                "soy free", "low carb"],
         options={"Flavor": ["Chocolate Chip", "Peanut Butter", "Cookies and Cream",
                             "Birthday Cake"],
                  "Size": ["12 Count", "24 Count"]},
         price=(12, 48)),
    dict(category="food", query="green tea",
         path="Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Green",
         nouns=["Green Tea", "Green Tea Bags", "Loose Leaf Green Tea"],
         suffixes=["Natural Antioxidants", "Premium Tea", "Hot or Iced"],
         attrs=["organic", "non gmo", "loose leaf", "individually wrapped", "kosher",
                "caffeine free", "sugar free"],
         options={"Flavor": ["Jasmine", "Matcha", "Lemon Ginger", "Original"],
                  "Size": ["20 Count", "40 Count", "100 Count"]},
         price=(4, 28)),
    dict(category="food", query="mixed nuts",
         path="Grocery & Gourmet Food › Snacks & Sweets › Nuts & Seeds › Mixed Nuts",
         nouns=["Mixed Nuts", "Deluxe Mixed Nuts", "Mixed Nuts Snack"],
         suffixes=["Snack Pack", "Resealable Jar", "Healthy Snack"],
         attrs=["unsalted", "gluten free", "non gmo", "resealable bag", "kosher",
                "keto friendly", "dry roasted"],
         options={"Size": ["16 Ounce", "2 Pound", "3 Pound"]},
         price=(8, 36)),
    dict(category="food", query="hot sauce",
         path="Grocery & Gourmet Food › Condiments & Salad Dressings › Hot Sauce",
         nouns=["Hot Sauce", "Pepper Sauce", "Chili Hot Sauce"],
         suffixes=["Small Batch", "5 Fl Oz Bottle", "Extra Hot"],
         attrs=["gluten free", "sugar free", "vegan", "no preservatives", "small batch",
                "all natural"],
         options={},
         price=(4, 22)),
    # ---------------------------------------------------------------- fashion
    dict(category="fashion", query="women's running shoes",
         path="Clothing, Shoes & Jewelry › Women › Shoes › Athletic › Running",
         nouns=["Running Shoes", "Running Sneakers", "Road Running Shoes"],
         suffixes=["for Women", "Womens Athletic Shoes", "Walking Tennis Shoes"],
         attrs=["non slip", "lightweight", "breathable mesh", "arch support", "memory foam",
                "rubber sole", "machine washable"],
         options={"Size": ["6", "6.5", "7", "7.5", "8", "8.5", "9", "10"],
                  "Color": ["Black", "White", "Grey", "Navy Blue", "Pink", "Black/White"]},
         price=(25, 95)),
    dict(category="fashion", query="men's t-shirt",
         path="Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts",
         nouns=["T-Shirt", "Crew Neck T-Shirt", "Tee Shirt"],
         suffixes=["for Men", "Mens Casual Tee", "Short Sleeve Top"],
         attrs=["cotton", "short sleeve", "machine wash", "moisture wicking", "regular fit",
                "crew neck", "tagless"],
         options={"Size": ["Small", "Medium", "Large", "X-Large", "XX-Large"],
                  "Color": ["Black", "White", "Grey", "Navy Blue", "Olive Green", "Burgundy"]},
         price=(8, 30)),
    dict(category="fashion", query="women's yoga leggings",
         path="Clothing, Shoes & Jewelry › Women › Clothing › Active › Leggings",
         nouns=["Yoga Leggings", "Yoga Pants Leggings", "Workout Yoga Leggings"],
         suffixes=["for Women", "Athletic Tights", "Gym Pants"],
         attrs=["high waist", "tummy control", "squat proof", "four way stretch", "side pockets",
                "moisture wicking"],
         options={"Size": ["X-Small", "Small", "Medium", "Large", "X-Large"],
                  "Color": ["Black", "Charcoal", "Navy Blue", "Wine Red", "Olive Green"]},
         price=(14, 45)),
    dict(category="fashion", query="men's winter jacket",
         path="Clothing, Shoes & Jewelry › Men › Clothing › Jackets & Coats › Down Jackets & Parkas",
         nouns=["Winter Jacket", "Puffer Jacket", "Winter Puffer Jacket"],
         suffixes=["for Men", "Warm Outerwear", "Mens Parka"],
         attrs=["water resistant", "hooded", "zipper closure", "fleece lined", "packable",
                "windproof"],
         options={"Size": ["Medium", "Large", "X-Large", "XX-Large"],
                  "Color": ["Black", "Navy Blue", "Olive Green", "Khaki", "Charcoal"]},
         price=(40, 160)),
    dict(category="fashion", query="baseball cap",
         path="Clothing, Shoes & Jewelry › Men › Accessories › Hats & Caps › Baseball Caps",
         nouns=["Baseball Cap", "Dad Baseball Cap", "Baseball Hat"],
         suffixes=["Unisex", "Low Profile", "Classic Cap"],
         attrs=["adjustable strap", "cotton", "sun protection", "breathable", "embroidered logo",
                "curved brim"],
         options={"Color": ["Black", "White", "Navy Blue", "Khaki", "Pink", "Olive Green"]},
         price=(8, 28)),
    dict(category="fashion", query="wool socks",
         path="Clothing, Shoes & Jewelry › Women › Clothing › Socks & Hosiery › Socks",
         nouns=["Wool Socks", "Hiking Socks", "Crew Socks"],
         suffixes=["for Women and Men", "Cushioned Crew", "Thermal Socks"],
         attrs=["merino wool", "cushioned sole", "moisture wicking", "odor resistant",
                "reinforced heel", "breathable"],
         options={"Size": ["Small", "Medium", "Large"],
                  "Color": ["Grey", "Black", "Brown", "Navy Blue"]},
         price=(10, 34)),
    # ---------------------------------------------------------------- furniture
    dict(category="furniture", query="office chair",
         path="Home & Kitchen › Furniture › Home Office Furniture › Home Office Chairs › Desk Chairs",
         nouns=["Office Chair", "Desk Chair", "Computer Chair"],
         suffixes=["for Home Office", "with Wheels", "Task Chair"],
         attrs=["lumbar support", "adjustable height", "ergonomic design", "mesh back", "swivel",
                "padded armrests"],
         options={"Color": ["Black", "Grey", "White", "Blue"]},
         price=(60, 260)),
    dict(category="furniture", query="coffee table",
         path="Home & Kitchen › Furniture › Living Room Furniture › Tables › Coffee Tables",
         nouns=["Coffee Table", "Living Room Table", "Center Table"],
         suffixes=["for Living Room", "with Shelf", "Cocktail Table"],
         attrs=["solid wood", "easy assembly", "storage shelf", "mid century modern",
                "metal frame", "rounded corners"],
         options={},
         price=(70, 320)),
    dict(category="furniture", query="bookshelf",
         path="Home & Kitchen › Furniture › Home Office Furniture › Bookcases",
         nouns=["Bookshelf", "Bookshelf Organizer", "Storage Bookshelf"],
         suffixes=["for Living Room", "Display Rack", "Standing Shelf Unit"],
         attrs=["easy assembly", "metal frame", "space saving", "anti tip hardware",
                "engineered wood", "open shelves"],
         options={"Size": ["3 Tier", "4 Tier", "5 Tier"],
                  "Color": ["Walnut", "Oak", "Black", "White"]},
         price=(35, 180)),
    dict(category="furniture", query="throw pillow covers",
         path="Home & Kitchen › Bedding › Decorative Pillows, Inserts & Covers › Throw Pillow Covers",
         nouns=["Throw Pillow Covers", "Pillow Covers", "Cushion Covers"],
         suffixes=["Set of 2", "for Couch and Sofa", "Decorative Pillowcases"],
         attrs=["velvet", "machine washable", "hidden zipper", "double sided", "linen blend",
                "set of 2"],
         options={"Size": ["18 x 18 Inch", "20 x 20 Inch", "12 x 20 Inch"],
                  "Color": ["Beige", "Grey", "Navy Blue", "Burgundy", "Olive Green"]},
         price=(9, 32)),
    dict(category="furniture", query="bar stools",
         path="Home & Kitchen › Furniture › Game & Recreation Room Furniture › Barstools",
         nouns=["Bar Stools", "Counter Height Bar Stools", "Kitchen Bar Stools"],
         suffixes=["Set of 2", "for Kitchen Island", "with Back"],
         attrs=["set of 2", "swivel", "adjustable height", "footrest", "pu leather",
                "easy assembly"],
         options={"Size": ["24 Inch", "26 Inch", "30 Inch"],
                  "Color": ["Black", "Grey", "Brown", "White"]},
         price=(60, 240)),
    dict(category="furniture", query="table lamp",
         path="Tools & Home Improvement › Lighting & Ceiling Fans › Lamps & Shades › Table Lamps",
         nouns=["Table Lamp", "Bedside Lamp", "Nightstand Lamp"],
         suffixes=["for Bedroom", "for Living Room", "Desk Light"],
         attrs=["usb port", "dimmable", "touch control", "linen shade", "bulb included",
                "ceramic base"],
         options={"Color": ["Black", "White", "Brass", "Grey"]},
         price=(18, 90)),
    # ---------------------------------------------------------------- electronics
    dict(category="electronics", query="wireless earbuds",
         path="Electronics › Headphones, Earbuds & Accessories › Headphones & Earbuds › Earbud Headphones",
         nouns=["Wireless Earbuds", "Bluetooth Earbuds", "True Wireless Earbuds"],
         suffixes=["with Charging Case", "in Ear Headphones", "for Sports"],
         attrs=["noise cancelling", "long battery life", "water resistant", "charging case",
                "built in microphone", "touch control"],
         options={"Color": ["Black", "White", "Navy Blue", "Rose Gold"]},
         price=(19, 120)),
    dict(category="electronics", query="usb c charger",
         path="Electronics › Computers & Accessories › Accessories & Peripherals › Chargers & Adapters",
         nouns=["USB C Charger", "Wall Charger", "Fast Charger Block"],
         suffixes=["for Phones and Tablets", "Power Adapter", "Travel Charger"],
         attrs=["fast charging", "foldable plug", "two ports", "compact design",
                "overheat protection", "gan technology"],
         options={"Style": ["20W", "30W", "65W"], "Color": ["White", "Black"]},
         price=(9, 49)),
    dict(category="electronics", query="phone case",
         path="Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
         nouns=["Phone Case", "Protective Phone Case", "Phone Cover Case"],
         suffixes=["Drop Protection", "Slim Cover", "with Screen Protector"],
         attrs=["shockproof", "slim fit", "wireless charging compatible", "raised edges",
                "clear back", "kickstand"],
         options={"Style": ["iPhone 14", "iPhone 15", "Galaxy S23", "Pixel 8"],
                  "Color": ["Black", "Clear", "Navy Blue", "Pink", "Olive Green"]},
         price=(7, 35)),
    dict(category="electronics", query="bluetooth speaker",
         path="Electronics › Portable Audio & Video › Portable Speakers & Docks › Bluetooth Speakers",
         nouns=["Bluetooth Speaker", "Portable Speaker", "Wireless Speaker"],
         suffixes=["for Outdoor", "with Deep Bass", "Party Speaker"],
         attrs=["waterproof", "long battery life", "stereo sound", "built in microphone",
                "deep bass", "usb c charging"],
         options={"Color": ["Black", "Blue", "Red", "Grey"]},
         price=(20, 140)),
    dict(category="electronics", query="hdmi cable",
         path="Electronics › Television & Video › Accessories › Cables › HDMI Cables",
         nouns=["HDMI Cable", "High Speed HDMI Cord", "HDMI 2.1 Cable"],
         suffixes=["for TV and Monitor", "Ethernet Supported", "for Gaming Consoles"],
         attrs=["4k resolution", "high speed", "braided cord", "gold plated connectors",
                "ethernet support"],
         options={"Size": ["3 Feet", "6 Feet", "10 Feet", "15 Feet"]},
         price=(6, 30)),
    dict(category="electronics", query="wireless mouse",
         path="Electronics › Computers & Accessories › Keyboards, Mice & Accessories › Mice",
         nouns=["Wireless Mouse", "Computer Mouse", "Cordless Mouse"],
         suffixes=["for Laptop", "with USB Receiver", "for PC and Mac"],
         attrs=["ergonomic design", "silent click", "rechargeable battery", "usb receiver",
                "adjustable dpi", "bluetooth connection"],
         options={},
         price=(8, 45)),
]

BRAND_HEADS = ["lu", "ve", "ka", "mo", "ze", "ti", "ra", "no", "sa", "be", "qui", "fi", "do", "xa",
               "pa", "ha", "ni", "co", "ye", "wi"]
BRAND_TAILS = ["mora", "lix", "vana", "ton", "rio", "sena", "quin", "dell", "brook", "nova", "rah",
               "vox", "lyn", "mix", "zen"]

BULLETS = [
    "{A}: made for everyday use and built to last.",
    "{A} - a {query} you can rely on day after day.",
    "Thoughtfully designed to be {a}, so you get more out of every use.",
    "{A} and easy to love; satisfaction guaranteed or your money back.",
    "Customers choose it because it is {a}.",
]
REVIEW_TITLES = ["Love it", "Great value", "Works as described", "Not bad", "Would buy again",
                 "Disappointed", "Exactly what I needed", "Okay for the price"]
REVIEW_BODIES = ["Arrived quickly and works well.", "Good quality for the price.",
                 "Not quite what I expected, but fine.", "My second purchase, still happy.",
                 "Nice, but the options are confusing.", "Would recommend to friends."]


def title_case(text: str) -> str:
    return " ".join(w if any(c.isdigit() for c in w) else w.capitalize() for w in text.split())


def make_raw_catalog(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Raw products, attributes and reviews in WebShop's formats."""
    rng = random.Random(seed)
    brands = sorted({(h + t).capitalize() for h in BRAND_HEADS for t in BRAND_TAILS})
    asins: set[str] = set()
    products: list[dict[str, Any]] = []
    attributes: dict[str, Any] = {}
    reviews: list[dict[str, Any]] = []
    for spec in TYPES:
        for _ in range(PRODUCTS_PER_TYPE):
            asin = ""
            while not asin or asin in asins:
                asin = "B0" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=8))
            asins.add(asin)
            brand = rng.choice(brands)
            attrs = rng.sample(spec["attrs"], rng.randint(3, min(5, len(spec["attrs"]))))
            in_title = attrs[:rng.randint(1, 2)]
            noun = rng.choice(spec["nouns"])
            suffix = rng.choice(spec["suffixes"])
            name = f"{brand} {' '.join(title_case(a) for a in in_title)} {noun} {suffix}"
            options = {opt: sorted(rng.sample(pool, rng.randint(2, min(5, len(pool)))),
                                   key=pool.index)
                       for opt, pool in spec["options"].items()}
            lo, hi = spec["price"]
            base = rng.randint(lo, hi) - 0.01
            if options and rng.random() < 0.2:
                pricing = f"${base:.2f} - ${base + rng.randint(2, 12):.2f}"
            else:
                pricing = f"${base:.2f}"
            shuffled = rng.sample(attrs, len(attrs))
            bullets = [rng.choice(BULLETS).format(A=a.capitalize(), a=a, query=spec["query"])
                       for a in shuffled]
            description = (f"The {brand} {noun.lower()} is {shuffled[0]} and {shuffled[-1]}. "
                           f"A {spec['query']} from {brand}, made with care and checked before "
                           f"it ships.")
            products.append({
                "asin": asin, "name": name, "category": spec["category"], "query": spec["query"],
                "product_category": spec["path"], "pricing": pricing,
                "small_description": bullets, "full_description": description,
                "customization_options": {opt: [{"value": v, "image": None} for v in values]
                                          for opt, values in options.items()} or None,
                "images": [f"https://example.invalid/webshop/{asin}.jpg"],
            })
            attributes[asin] = {"attributes": attrs}
            if rng.random() < 0.6:
                stars = [rng.choice((2, 3, 4, 4, 5, 5, 5)) for _ in range(rng.randint(1, 3))]
                reviews.append({
                    "asin": asin, "average_rating": round(sum(stars) / len(stars), 1),
                    "reviews": [{"title": rng.choice(REVIEW_TITLES), "stars": s,
                                 "review": rng.choice(REVIEW_BODIES)} for s in stars],
                })
    rng.shuffle(products)  # items_shuffle: catalog order carries no type information
    return products, attributes, reviews


def title_noun_table(products: list[dict[str, Any]]) -> dict[str, list[str]]:
    """spaCy's nouns (as WebShop's reward finds them) of every product title."""
    return {p["name"]: list(spacy_title_nouns(p["name"])) for p in sorted(products, key=lambda p: p["name"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args()
    products, attributes, reviews = make_raw_catalog(SEED)
    catalog = Catalog.from_raw(products, attributes, reviews)
    goals = generate_goals(catalog, TRAIN_GOAL_SEED, N_TRAIN_GOALS)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in [(PRODUCTS_FILE, products), (ATTRIBUTES_FILE, attributes),
                       (REVIEWS_FILE, reviews), (TRAIN_GOALS_FILE, goals),
                       (NOUN_TABLE_FILE, title_noun_table(products))]:
        (args.out / name).write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    print(f"{len(products)} products, {len(goals)} train goals -> {args.out}")


if __name__ == "__main__":
    main()
