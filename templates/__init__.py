"""Jinja2 templates of the MSL scaffolding (package data; read by `triton_metal.codegen.templates`)."""
