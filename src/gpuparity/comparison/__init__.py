"""Your own runs compared: sides, the statistics and verdicts, normalisation, serving at equal
interactivity, trends, the headline sentence and the DataFrame API (gpuparity.load / compare)."""
