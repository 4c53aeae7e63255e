"""zps.train"""
