"""Allocation policies for the Allocator: plain functions over plain data (see api.py in this
package).
"""
