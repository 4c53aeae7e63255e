"""zps.cli"""
