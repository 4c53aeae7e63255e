"""zps.runtime"""
