"""The ``raykube`` command line. Thin: parse options, call into the library, render for humans."""
