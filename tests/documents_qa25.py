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
<p>Thank you for buying the Skylark WS-40. The station has two parts: the outdoor sensor unit, which measures temperature, humidity, wind speed, wind direction and rainfall, and the indoor display console. This manual explains how to set up the station, how to use it and what to do when something goes wrong.</p>

<h2>What is in the box</h2>
<ul>
<li>One indoor display console</li>
<li>One outdoor sensor unit with a wind cup and a rain gauge</li>
<li>One mounting pole and two U-bolts</li>
<li>One mains adapter (5 V) for the console</li>
<li>This manual</li>
</ul>
<p>Batteries are not included. The sensor unit needs two AA lithium batteries; the console takes three AAA batteries as a backup when mains power fails.</p>

<h2>Setting up</h2>
<ol>
<li>Insert the two AA lithium batteries into the sensor unit. The red light on the sensor flashes once every 12 seconds when it is sending.</li>
<li>Plug the console into the mains adapter, then insert the backup batteries.</li>
<li>Hold the SYNC button on the console for 3 seconds. The console searches for the sensor for up to 3 minutes.</li>
<li>When the outdoor temperature appears on the console, the two are paired.</li>
<li>Mount the sensor unit on the pole at least 1.5 metres above the ground, away from walls and trees, with the arrow on the top pointing north.</li>
</ol>
<p>The sensor and the console must be within 100 metres of each other in open ground. Walls, metal roofs and other wireless devices reduce this range.</p>

<h2>Using the console</h2>
<p>Press MODE to move between the current readings, the 24-hour history and the forecast. Press and hold MAX/MIN for 2 seconds to clear the recorded highs and lows. To change between Celsius and Fahrenheit, press the UNIT button once. The backlight stays on when the console is on mains power; on batteries it lights for 10 seconds when any button is pressed.</p>
<p>The forecast is based on changes in air pressure over the last 12 hours and is correct about 70% of the time. It shows one of five symbols: sunny, partly cloudy, cloudy, rain and storm.</p>

<h2>Calibration</h2>
<p>To calibrate the pressure reading, hold UNIT and MODE together for 5 seconds until the pressure value flashes, then use the arrow buttons to enter the sea-level pressure from your local weather service. Rainfall can be calibrated in the same way by holding MAX/MIN and MODE; the default factor is 1.00.</p>

<h2>Care and maintenance</h2>
<p>Clean the rain gauge every three months, because leaves and insects block the funnel. Replace the sensor batteries once a year, or when the battery symbol appears on the console. Do not use rechargeable batteries in the sensor unit: their voltage falls in cold weather and the sensor stops sending below minus 10 degrees Celsius. Lithium batteries work down to minus 40 degrees Celsius.</p>
<p>The console is for indoor use only and is not waterproof. The sensor unit is rated IP65 and can stay outside all year.</p>

<h2>Error codes</h2>
<table>
<tr><th>Code</th><th>Meaning</th><th>What to do</th></tr>
<tr><td>E1</td><td>No signal from the sensor</td><td>Check the sensor batteries, move the console closer and hold SYNC for 3 seconds</td></tr>
<tr><td>E2</td><td>Wind sensor blocked</td><td>Check that the wind cup turns freely and remove any ice or debris</td></tr>
<tr><td>E3</td><td>Rain gauge fault</td><td>Clean the funnel and check that the tipping bucket moves</td></tr>
<tr><td>E4</td><td>Console memory full</td><td>Hold MAX/MIN for 2 seconds to clear the history</td></tr>
<tr><td>E5</td><td>Temperature out of range</td><td>The sensor reads from minus 40 to plus 60 degrees Celsius; no action is needed</td></tr>
<tr><td>E7</td><td>Internal fault</td><td>Reset the console by pressing RESET with a paper clip; if E7 returns, contact support</td></tr>
</table>

<h2>Warranty and support</h2>
<p>The Skylark WS-40 has a two-year warranty from the date of purchase. Repairs under warranty usually take 10 working days.</p>
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
