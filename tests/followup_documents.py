"""Documents of kinds the follow-up tests had not seen (qa23's outside pass): a residents' association's
minutes with split years and quarters of a year, a home insurance policy with exclusions and excesses, a
school timetable with term dates."""

MINUTES = """# Linden Road Residents' Association: Minutes of the Annual General Meeting, 9 October 2023

## Present

The meeting was chaired by Harriet Blake. Fourteen members attended. The secretary, Tomasz Wojcik, took the
minutes. Apologies were received from Elaine Moss.

## Treasurer's report

The treasurer, Colin Ashworth, reported that income in 2022-23 was 2,340 pounds, mostly from subscriptions
and the summer fair. Spending in 2022-23 was 1,980 pounds. The balance at the end of FY23 was 3,115 pounds.
Income in 2021-22 had been 1,870 pounds. Subscriptions stay at 10 pounds a household for 2024.

## Street lighting

Members complained that four street lights near the bus stop had been out since August. The council replied
that repairs were scheduled for Q4 2023.

## Trees

The council proposed to fell two lime trees outside number 42 in Q3 2023, because their roots had lifted
the pavement. The association objected, and the council agreed to repair the pavement instead. Colin
Ashworth did not agree with the objection and abstained.
"""

POLICY = """# Harbourside Home Insurance: Policy Schedule

## The policy

This policy was issued by Greyfriars Mutual to Nadia Okafor on 14 March 2021. Cover runs from 1 April 2021
to 31 March 2022 and renews each year unless either side cancels it.

## Claims history

In November 2021 a burst pipe in the loft flooded the landing. The claim was for 6,300 pounds and
Greyfriars Mutual paid 5,800 pounds after deducting the 500 pound excess. The loss adjuster, Martin Cole,
said the pipe had frozen because the loft was unheated.
"""

TIMETABLE = """# St Aldhelm's Primary School: Year 5 Term Dates 2024-25

## Term dates

The spring term runs from 6 January 2025 to 4 April 2025, with half term from 17 February to 21 February.
The summer term runs from 22 April 2025 to 22 July 2025.

## Trips

A residential trip to the Forest of Dean runs from 9 June to 11 June 2025 and costs 165 pounds.
"""

TEXTS = {"minutes.md": MINUTES, "policy.md": POLICY, "timetable.md": TIMETABLE}
