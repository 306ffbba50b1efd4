"""Checks of a running lab against its intent."""
