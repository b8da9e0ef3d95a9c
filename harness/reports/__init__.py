"""A checked run drawn for people and tools: the terminal summary, JUnit XML, report.html."""
