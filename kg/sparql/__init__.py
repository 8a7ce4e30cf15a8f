"""SPARQL beyond the standard: recall as a SERVICE and RDFS entailment on request (issue 19)."""
