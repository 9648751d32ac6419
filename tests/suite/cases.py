"""The kernel corpus. Each case: .dvk source, inputs, and a float64 reference in Python that
mutates the input dict exactly as the kernel mutates its arrays. grad=True cases are also
checked in reverse and forward mode against finite differences of the reference. The cases
sit in the modules below, by topic; CASES is all of them."""
import cases_basic
import cases_ops
import cases_stages
import vec_cases

CASES = cases_basic.C + cases_ops.C + cases_stages.C + vec_cases.C
