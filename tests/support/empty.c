/* Keeps the support library non-empty. */
typedef int os_test_support_unused;
