{# The metal_kernel header: helpers the body calls. Plain data in: `kernel_name`, `helpers` (rendered helper texts). #}
// triton_metal: helpers for kernel {{ kernel_name }}
{% for text in helpers %}
{{ text }}
{% endfor %}
