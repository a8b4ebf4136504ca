#!/usr/bin/env python3
"""Greets everyone named on the command line."""

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description="Greet people by name.")
    parser.add_argument("names", nargs="+", help="who to greet")
    args = parser.parse_args()
    for name in args.names:
        print(f"Hello, {name}!")


if __name__ == "__main__":
    main()
