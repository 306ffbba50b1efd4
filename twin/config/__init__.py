"""Configuration, derived from a Fabric (pure): FRR files rendered from Jinja2
templates per kind and feature (`render`), the kernel side of the overlay as
steps (`overlay`, on the one table of operations in `steps`) and the steps that
take a node from one intent to another (`reconcile`)."""
