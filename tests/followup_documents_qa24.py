"""Documents of kinds the follow-up tests had not seen (qa24's outside pass): a community garden's rules and
allotment list with elections, a software release history with versions and maintainers, a clinic's
patient leaflet with fees, a deposit and opening hours."""

GARDEN = """# Ashgrove Community Garden: Rules and Allotment List 2024

## About the garden

Ashgrove Community Garden was opened on 12 May 2016 on land leased from the parish council. The lease runs
until 2031. The garden has 24 allotment plots and a shared orchard of 15 fruit trees.

## Committee

At the annual meeting in February 2024, Grace Okonkwo was elected chair, replacing Martin Hale, who had chaired
the committee since 2016. Leo Baptiste was re-elected treasurer. Fatima Khan became the first plot holder to
win the county vegetable show, in September 2023.

## Rules

Plot holders must keep their plot cultivated. Bonfires are not allowed at any time. Dogs are allowed in the
garden on a lead but not on the plots.

## Allotment list

There were 31 people on the waiting list in March 2024, against 19 a year earlier.
"""

RELEASES = """# Ledgerline: Release History

## Version 2.4 (released 18 September 2023)

Version 2.4 fixed a rounding error in VAT returns that had been reported by Amina Diallo. It added dark mode.

## Version 2.0 (released 2 June 2022)

Version 2.0 introduced bank feeds for three UK banks and gift aid claims. Ravi Menon became the project's
lead maintainer in 2022, taking over from Helen Cross, who had led the project since its start in 2017.
Version 2.0 raised the minimum memory to 4 GB.
"""

LEAFLET = """# Millbrook Physiotherapy Clinic: Information for Patients

## Appointments

The clinic is closed on Sundays and bank holidays. A first assessment lasts 45 minutes and costs 60 pounds.

## Cancelling

The deposit of 20 pounds paid when booking is non-refundable, but it is taken off the cost of your first
assessment.

## Back pain classes

Each class holds up to 10 patients. The classes are not suitable for patients who have had surgery in the
last three months.
"""

TEXTS = {"garden.md": GARDEN, "releases.md": RELEASES, "leaflet.md": LEAFLET}
