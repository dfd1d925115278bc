"""Shared by the benchmark scripts: each owns one marked section of docs/benchmarks.md."""
import os

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'benchmarks.md')


def update_section(name, heading, text, path=DOC):
    """Replace the text between <!-- {name}:start --> and <!-- {name}:end -->, or append the section."""
    start, end = f'<!-- {name}:start -->', f'<!-- {name}:end -->'
    doc = open(path).read() if os.path.exists(path) else '# Benchmarks\n'
    if start in doc and end in doc:
        head, rest = doc.split(start, 1)
        doc = head + start + '\n' + text + '\n' + end + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip('\n') + f'\n\n## {heading}\n\n{start}\n{text}\n{end}\n'
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(doc)
    return path
