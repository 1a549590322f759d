"""Tests of boundary_api.video (a package: its test modules share names with other folders')."""
