"""Small documents for the bot tests: two unrelated topics, a few hundred words each."""

from __future__ import annotations

LIGHTHOUSE = """# Kestrel Point Lighthouse Manual

## The lamp and lens

The Kestrel Point lighthouse uses a first-order Fresnel lens made of brass and hand-ground glass prisms.
The lens floats on a bath of mercury so that a single keeper can turn it by hand if the motor fails.
The lamp burns paraffin vapour under an incandescent mantle, and the keeper trims the mantle every evening.
Each night the lamp hours are written in the logbook together with the weather and the visibility.

## Cleaning and maintenance

The prisms of the lens are cleaned every morning with a soft linen cloth and a little spirit.
Once a month the keeper polishes the brass frame and checks the clockwork that rotates the lens.
Salt spray clouds the lantern glass, so the outer panes are washed twice a week from the gallery.
Spare mantles, wicks and a second burner are stored in the oil house beside the tower.

## Signals and schedules

The light shows two white flashes every fifteen seconds, which sailors know as the Kestrel signature.
In fog the keeper sounds the diaphone horn once every thirty seconds until the fog lifts.
The light is lit at sunset and put out at sunrise, and the times are copied from the nautical almanac.
A relief keeper arrives every six weeks by boat, weather permitting, with food and paraffin.

## History of the station

The tower was built in 1871 from granite quarried on the island itself.
It replaced an older wooden beacon that burned down during a winter storm in 1869.
In 1952 the station was connected to a radio telephone so that the keepers could call the harbour.
The last resident keeper left in 1989, when the light was automated and fitted with an electric lamp.
"""

SOURDOUGH = """# Bakery Notes on Sourdough

## Feeding the starter

Our rye starter is fed twice a day with equal weights of flour and water at about twenty-four degrees.
A healthy starter doubles in four to six hours and smells of yoghurt and green apples.
If the starter smells of nail varnish it is hungry, and it should be fed more often for a few days.
We keep a backup of the starter dried on baking paper in a sealed jar in the pantry.

## Mixing and fermentation

The dough is mixed from strong white flour, water, salt and ripe starter, then left to rest for an hour.
During bulk fermentation the baker folds the dough four times, once every half hour.
Bulk fermentation ends when the dough has risen by about half and shows bubbles at the sides of the tub.
Cold retarding overnight in the fridge deepens the flavour and makes the loaves easier to score.

## Baking

Loaves are baked in cast iron pots preheated to two hundred and fifty degrees for forty-five minutes.
The lid stays on for the first twenty minutes so that steam lets the crust expand before it sets.
A loaf is done when its crust is deep brown and it sounds hollow when tapped on the bottom.
The bread must cool for at least an hour before slicing, or the crumb turns gummy.
"""
