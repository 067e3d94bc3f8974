{# The metal_kernel header: helpers the body calls. Plain data in: `kernel_name`, `target` (`apple9:3.2`), `helpers` (rendered helper texts). #}
// triton_metal: helpers for kernel {{ kernel_name }}, compiled for {{ target }}
{% for text in helpers %}
{{ text }}
{% endfor %}
