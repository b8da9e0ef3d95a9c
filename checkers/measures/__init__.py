"""What a run measured, once, for the properties to judge: overlap, early loss, releases that found nothing, faults, topology findings."""
