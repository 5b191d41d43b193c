# bench/watch/churn.pl — a perl service with heavy transient churn and no
# leak: every step a string of 1 to 60 MiB, held 0.2 to 2 s, then freed.
# Prints "ready PID". Runs until killed. Not a test: bench/watch/run.sh.
use strict;
use Time::HiRes qw(sleep);
srand(1);
$| = 1;
print "ready $$\n";
while (1) {
    my $buf = 'x' x ((1 + int(rand(60))) << 20);
    sleep(0.2 + rand(1.8));
    undef $buf;
}
