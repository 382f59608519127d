"""What tests, benchmarks and chaos scripts check tables against: answers computed independently
(plain Python over the landed files), crash and kill harnesses, bounded child processes. Not part of
the installed package; imported from the checkout like devstack/."""
