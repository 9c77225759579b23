"""Common English first names that are almost always one gender's, for a follow-up's he/she.

Only a fallback: what the conversation itself shows (a title, 'his wife Anne', the pronoun right after a
name) comes first. Names often given to both (Jordan, Leslie, Sam, Robin, Jean, Alex) and names that are
also common places or words (Florence, Victoria, Hope, Faith, Will) are left out, so a name missing here
says nothing either way.
"""

from __future__ import annotations

MALE = frozenset(
    """aaron abraham adam adrian albert alfred alan allan ambrose andrew anthony archibald arnold arthur
    augustus barnaby bartholomew basil benjamin bernard bertram brian bruce caleb carl cecil charles
    christopher clarence clement cornelius cuthbert cyril daniel david dennis donald douglas duncan ebenezer
    edgar edmund edward edwin elias elijah ernest eugene ezekiel felix ferdinand francis frank frederick
    gabriel geoffrey george gerald gilbert godfrey gordon gregory harold harry henry herbert horace howard
    hubert hugh humphrey isaac isaiah jacob james jasper jeremiah jeremy john jonathan joseph joshua josiah
    kenneth lancelot lawrence leonard lewis luke malcolm mark martin matthew michael moses nathan nathaniel
    neil nicholas norman oliver oscar oswald patrick paul percy peter philip ralph raymond reginald reuben
    richard robert roger ronald rupert samuel saul sebastian silas simon solomon stanley stephen steven
    theodore thomas timothy tobias victor vincent walter wilfred william zachary
    ben bill billy bob dick fred hank jack jeff jim jimmy joe mike ted tom tommy tony
    boris carlo erik hans ivan karl lars nils olaf otto pierre sven""".split()
)

FEMALE = frozenset(
    """abigail ada adelaide agatha agnes alice amelia amy angela ann anna anne annie arabella barbara
    beatrice bertha betty bridget caroline catherine cecilia charlotte christina christine clara constance
    cordelia deborah diana dinah dora dorothy edith eleanor elinor eliza elizabeth ellen eloise emily emma
    esther ethel eugenie eva evelyn fanny frances gertrude gladys harriet helen henrietta hester hilda irene
    isabel isabella jane janet jemima jennifer jessica joan josephine judith julia juliet katherine kathleen
    laura lavinia letitia lillian louisa louise lucy lydia mabel margaret maria marian marie martha mary
    matilda maud maude mildred miriam molly nancy nora olive olivia patience patricia pauline penelope
    priscilla rachel rebecca rosalind rose ruth sally sarah sophia sophie susan susanna sylvia teresa
    ursula violet winifred
    bella betsy ella jenny kate katie lisa lizzie meg nell nelly peggy polly rita sara tess wendy
    astrid ingrid kari karin kjersti lisbeth sigrid""".split()
)


def gender_of_first_name(name: str) -> str | None:
    """'m' or 'f' for a first name the lists hold, else None."""
    lower = name.lower()
    if lower in MALE:
        return "m"
    if lower in FEMALE:
        return "f"
    return None
