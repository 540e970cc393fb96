info /tmp
