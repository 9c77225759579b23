"""Documents of qa25's outside pass, shortened: a small company's employee handbook (Markdown), a local
history of a mill (plain text, headings as lines of their own), a weather station's manual (HTML, an error
code table in a leaf that spans two sections) and a tenants' committee's minutes."""

HANDBOOK = """# Brackenfield Print Co.: Employee Handbook

## Welcome

Brackenfield Print Co. is a small printing company in Otley, founded in 1994 by Susan Hargreaves. We employ 38
people across the print floor, the design studio and the office. If anything here is unclear, ask Priya
Mistry, our HR manager.

## Holidays

Full-time staff receive 25 days of paid holiday a year, plus the eight bank holidays. You may carry over up
to 5 unused days into the next holiday year.

## Sickness

If you are ill, phone your line manager before 9:00 am on the first day of absence. The company pays full
pay for the first 10 days of sickness in any twelve-month period, then Statutory Sick Pay.

## Pensions and benefits

The company contributes 5% of salary to the pension scheme. The company also provides free eye tests and a
cycle-to-work scheme.
"""

HISTORY = """The Weir Mill at Cranleigh Bridge: A Short History

The village of Cranleigh Bridge sits where the river Lune narrows, and for almost two centuries its life
turned on the Weir Mill.

The building of the mill

The Weir Mill was built in 1788 by Josiah Fenwick, a Lancaster merchant. When it opened in the spring of
1789 the mill employed 85 people.

The Fenwick years

Josiah Fenwick died in 1811 and the mill passed to his son, Edward Fenwick. In 1836 a flood broke the weir
and stopped the mill for seven months. Edward Fenwick rebuilt the weir in stone at a cost of 2,300 pounds.
Edward Fenwick had no children.

The Ashworth years

By 1860 the mill employed 310 people and ran 8,000 spindles. The mill closed on 30 September 1971.
"""

MANUAL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Skylark WS-40 Home Weather Station: User Manual</title></head>
<body>
<h1>Skylark WS-40 Home Weather Station: User Manual</h1>
<p>The station has two parts: the outdoor sensor unit and the indoor display console.</p>
<h2>Care and maintenance</h2>
<p>Clean the rain gauge every three months. The console is for indoor use only and is not waterproof.</p>
<h2>Error codes</h2>
<table>
<tr><th>Code</th><th>Meaning</th><th>What to do</th></tr>
<tr><td>E1</td><td>No signal from the sensor</td><td>Check the sensor batteries, move the console closer and hold SYNC for 3 seconds</td></tr>
<tr><td>E2</td><td>Wind sensor blocked</td><td>Check that the wind cup turns freely and remove any ice</td></tr>
<tr><td>E7</td><td>Internal fault</td><td>Reset the console by pressing RESET with a paper clip; if E7 returns, contact support</td></tr>
</table>
<h2>Warranty</h2>
<p>The Skylark WS-40 has a two-year warranty from the date of purchase. Repairs under warranty usually take 10
working days.</p>
</body></html>
"""

MINUTES = """Holmebrook Tenants' Association: Minutes of the Committee Meeting

Held on Tuesday 14 January 2025 at 7:00 pm in the community room.

Treasurer's report

Ruth Clegg reported a balance of 2,184 pounds at 31 December 2024. The committee agreed to raise the annual
subscription from 5 to 6 pounds per household. Colin Ward voted against.

Repairs and the lifts

Calder Homes has ordered a new lift for Block B, which will cost 86,000 pounds and should be installed by the
end of May 2025.
"""

TEXTS = {"handbook.md": HANDBOOK, "mill_history.txt": HISTORY, "manual.html": MANUAL, "minutes.txt": MINUTES}

PAPER = """# Mulch Type and Soil Moisture in Raised Vegetable Beds

## Results

| Treatment | Mean soil moisture (%) | Weeds per bed per count | Courgette yield (kg per bed) |
|---|---|---|---|
| No mulch | 19.8 | 14.2 | 9.6 |
| Straw | 27.4 | 3.1 | 12.8 |
| Wood chip | 24.9 | 1.7 | 11.4 |
| Black plastic | 23.1 | 2.4 | 14.1 |

All three mulches kept soil moisture higher than bare soil.
"""
