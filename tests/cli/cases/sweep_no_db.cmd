sweep --default
