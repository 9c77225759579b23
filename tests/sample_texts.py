"""Small documents the tests write themselves (original text; no ../shared needed)."""

from __future__ import annotations

RAILWAY_TOPICS = {
    "Building the line": [
        "The Harrow Valley Railway was surveyed in 1871 by the engineer Ada Pennick.",
        "Pennick chose a route along the river to avoid the granite ridge to the north.",
        "Construction began in the spring of 1872 with four hundred navvies from the lowland towns.",
        "The crews laid eleven miles of track in the first season despite the heavy rains.",
        "A stone viaduct of nine arches carried the line across the Merrow gorge.",
        "The viaduct was finished in 1874 and cost the company nearly forty thousand pounds.",
    ],
    "The great flood": [
        "In October 1903 the river Merrow rose eight feet in a single night.",
        "Floodwater washed away the embankment below Kelby station and stranded two trains.",
        "Stationmaster Tobias Wren led the passengers to the chapel on the hill by lantern light.",
        "Nobody drowned, but the line stayed closed for seven weeks while the embankment was rebuilt.",
        "After the flood the company raised the track by three feet along the lower valley.",
    ],
    "Life of the valley": [
        "The railway carried slate from the Orran quarries to the coast every weekday.",
        "Farmers sent milk churns on the early train so that the town dairies had fresh milk by noon.",
        "On market days the carriages were crowded with families, baskets and the occasional goat.",
        "Children from the hill farms rode the train to the new school at Kelby after 1890.",
        "The railway made the valley less isolated and its people less dependent on the rough mountain road.",
    ],
    "Decline and revival": [
        "Lorries took most of the slate traffic in the 1950s and passenger numbers fell every year.",
        "The last scheduled train ran on the ninth of March 1962.",
        "In 1971 a society of volunteers bought the Kelby section for a symbolic sum of one pound.",
        "The volunteers restored the steam locomotive Merrow Queen over twelve patient winters.",
        "Today heritage trains run on summer weekends and the valley celebrates its railway every June.",
    ],
}

BEEKEEPING_TOPICS = {
    "Hives": [
        "A modern beehive is built from stacked wooden boxes called supers.",
        "Each super holds ten removable frames on which the bees draw their wax comb.",
        "The queen lays up to two thousand eggs a day in the brood chamber at the bottom.",
        "A queen excluder keeps her out of the honey supers above.",
    ],
    "Honey": [
        "Bees turn nectar into honey by evaporating its water with the beating of their wings.",
        "A strong colony can store more than fifty kilograms of honey in a good summer.",
        "Beekeepers extract honey with a centrifuge that spins the uncapped frames.",
        "Heather honey is so thick that it must be pressed from the comb instead.",
    ],
    "Swarming": [
        "In late spring a crowded colony raises new queens and the old queen leaves with half the bees.",
        "The swarm hangs in a cluster on a branch while scout bees search for a new home.",
        "Beekeepers prevent swarming by giving the colony more room before it feels crowded.",
    ],
}


def document(topics: dict[str, list[str]], title: str) -> str:
    """A markdown document: a title, then one section per topic."""
    parts = [f"# {title}", ""]
    for heading, sentences in topics.items():
        parts += [f"## {heading}", "", " ".join(sentences), ""]
    return "\n".join(parts)


RAILWAY = document(RAILWAY_TOPICS, "The Harrow Valley Railway")
BEEKEEPING = document(BEEKEEPING_TOPICS, "Keeping Bees")
