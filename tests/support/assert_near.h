/*
 * assert_near.h - cmocka assertions on doubles for the unit tests (cmocka
 * 1.1 compares floats only).  Include after <cmocka.h> and <math.h>.
 */
#ifndef OPSCHED_TEST_ASSERT_NEAR_H
#define OPSCHED_TEST_ASSERT_NEAR_H

/* Fails unless |a - b| <= eps, printing both with full precision. */
#define assert_double_equal(a, b, eps)                                                             \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%s = %.17g, expected %.17g (+-%g)", #a, a_, b_, (double)(eps));              \
    } while (0)

#endif /* OPSCHED_TEST_ASSERT_NEAR_H */
