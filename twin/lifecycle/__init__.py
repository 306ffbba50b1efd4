"""A lab's life: its state on disk (`state`), bring-up (`bringup`: create, wire,
configure), the convergence barrier (`barrier`), the running-lab context every
later stage works on (`context`), status against intent (`status`) and removal
of exactly what the lab owns (`cleanup`)."""
