"""The data model: GPU architectures and their spellings (``arch``) and the immutable
inventory of facts that readers build and every judgement reads (``inventory``)."""
